#!/usr/bin/env python3
"""Writes a byte-level token stream for effrun: a flat file of little-endian
uint16 token ids (the nanoGPT ".bin" format), one token per byte of a text.

Default text: the whole King James Bible from Debian's bible-kjv package
(about 4.3 MB, verse references removed). The example GPT has a vocabulary
of 256, so byte values are its tokens.

usage: /usr/bin/python3 examples/make_token_stream.py [--text FILE] [--out F.bin]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_examples import text_bytes  # noqa: E402


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--text", help="any text file (default: the KJV Bible)")
    ap.add_argument("--out", default=os.path.join(here, "out", "kjv.bin"))
    args = ap.parse_args()
    if args.text:
        with open(args.text, "rb") as f:
            data, source = f.read(), args.text
    else:
        data, source = text_bytes("Gen1:1-Rev22:21")
    if len(data) < 1024:
        raise SystemExit(f"make_token_stream.py: {source}: only {len(data)} "
                         "bytes; a language model needs a longer text")
    tokens = np.frombuffer(data, dtype=np.uint8).astype("<u2")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    tokens.tofile(tmp)
    os.replace(tmp, args.out)
    print(f"{args.out}: {len(tokens):,} tokens from {source}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Damages or edits .effx files for effrun's error tests.

  effx_tool.py IN OUT truncate N        keep the first N bytes (N < 0: drop -N)
  effx_tool.py IN OUT flip SECTION I    flip a bit of byte I of a section
                                        (header, manifest, code, state); CRCs
                                        are left as they are
  effx_tool.py IN OUT manifest JSON     merge JSON into the manifest (null
                                        deletes a key) and repack with
                                        correct offsets and CRCs
  effx_tool.py IN OUT code FILE         replace the code section, repacked
  effx_tool.py IN info                  print the manifest's regions and size
"""
import json
import struct
import sys
import zlib

HEADER = struct.Struct("<8sII" + "QQII" * 3 + "II")
assert HEADER.size == 96
ALIGN = 64


def parse(data):
    f = HEADER.unpack_from(data, 0)
    sections = {}
    for i, name in enumerate(("manifest", "code", "state")):
        off, size = f[3 + 4 * i], f[4 + 4 * i]
        sections[name] = data[off:off + size]
    return f, sections


def pack(version, manifest, code, state):
    out = bytearray(b"\0" * ((HEADER.size + ALIGN - 1) // ALIGN * ALIGN))
    fields = []
    for blob in (manifest, code, state):
        off = len(out)
        out += blob
        out += b"\0" * (-len(out) % ALIGN)
        fields += [off, len(blob), zlib.crc32(blob), 0]
    header = HEADER.pack(b"EFFX\r\n\x1a\n", version, HEADER.size, *fields, 0, 0)
    crc = zlib.crc32(header)
    header = HEADER.pack(b"EFFX\r\n\x1a\n", version, HEADER.size, *fields, crc, 0)
    out[:HEADER.size] = header
    return bytes(out[:fields[-4] + fields[-3]])


def main(argv):
    data = open(argv[1], "rb").read()
    if argv[2] == "info":
        manifest = json.loads(parse(data)[1]["manifest"])
        print(json.dumps(manifest["regions"], sort_keys=True))
        print(sum(manifest["regions"].values()))
        return
    out, op = argv[2], argv[3]
    if op == "truncate":
        n = int(argv[4])
        result = data[:n] if n >= 0 else data[:len(data) + n]
    elif op == "flip":
        header = HEADER.unpack_from(data, 0)
        names = ("manifest", "code", "state")
        base = 0 if argv[4] == "header" else header[3 + 4 * names.index(argv[4])]
        i = base + int(argv[5])
        result = data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1:]
    elif op in ("manifest", "code"):
        header, sections = parse(data)
        manifest = json.loads(sections["manifest"])
        code = sections["code"]
        if op == "manifest":
            for key, value in json.loads(argv[4]).items():
                if value is None:
                    manifest.pop(key, None)
                else:
                    manifest[key] = value
        else:
            code = open(argv[4], "rb").read()
        result = pack(header[1], json.dumps(manifest).encode(), code,
                      sections["state"])
    else:
        sys.exit("unknown operation " + op)
    open(out, "wb").write(result)


if __name__ == "__main__":
    main(sys.argv)

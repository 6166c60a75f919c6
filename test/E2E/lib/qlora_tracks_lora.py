#!/usr/bin/env python3
"""QLoRA tracks LoRA: the example GPT (byte-level, KJV text windows)
fine-tuned with LoRA in bf16 autocast, once with fp32 frozen base weights
(--lora) and once with them stored as NF4 (--lora --qlora), from the same
adapters (the same seed), on the same rows. NF4 perturbs every base weight by
up to half a code step, so the trajectories differ; the check is that the
QLoRA run learns like the LoRA run: both fall, and the means of their last
quarter of losses differ by at most `--band` x what LoRA learned (its first
quarter's mean minus its last's).

usage: qlora_tracks_lora.py --bin BUILD/bin --work DIR [--steps 40]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as t  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--band", type=float, default=0.2)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    import torch
    model, B, data = t.make("gpt", args.steps, 0)
    names = list(data)
    onnx_path = os.path.join(args.work, "gpt.onnx")
    t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names), names,
             onnx_path)
    npz = os.path.join(args.work, "gpt.npz")
    np.savez(npz, **data)
    lora = "--lora=rank=8,alpha=16,targets=c_attn|c_proj|mlp\\.[02]\\.weight"
    losses = {}
    for name, extra in (("lora", []), ("qlora", ["--qlora"])):
        effx = os.path.join(args.work, name + ".effx")
        log = os.path.join(args.work, name + ".jsonl")
        subprocess.run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx,
                        "--precision", "bf16", "--optimizer", "adamw",
                        "--lr", "3e-3", lora] + extra, check=True,
                       stderr=subprocess.DEVNULL)
        subprocess.run([os.path.join(args.bin, "effrun"), effx, "--data", npz,
                        "--steps", str(args.steps), "--log", log, "-q"],
                       check=True)
        losses[name] = [json.loads(l)["loss"] for l in open(log)]
    k = max(1, args.steps // 4)
    first = {n: float(np.mean(v[:k])) for n, v in losses.items()}
    last = {n: float(np.mean(v[-k:])) for n, v in losses.items()}
    for n in losses:
        print("%-6s loss: first %d steps %.4f, last %d steps %.4f" %
              (n, k, first[n], k, last[n]))
    learned = first["lora"] - last["lora"]
    gap = abs(last["qlora"] - last["lora"])
    ok = learned > 0 and gap <= args.band * learned and all(
        last[n] < first[n] for n in losses)
    print("qlora vs lora, last %d steps: gap %.4f, %.3f of what LoRA learned "
          "(band %.2f)%s" % (k, gap, gap / learned if learned > 0 else float("inf"),
                             args.band, "" if ok else "  MISMATCH"))
    print("qlora: PASS" if ok else "qlora: FAIL")


if __name__ == "__main__":
    main()

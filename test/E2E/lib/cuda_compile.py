#!/usr/bin/env python3
"""CI's compile check of the cuda target (no GPU): every end-to-end model
family compiles with `effc --target cuda` under the settings the CPU suite
trains with, and each .effx's device code holds SASS for sm_80 and sm_90 and
PTX for compute_90 (listed by cuobjdump when the toolkit has it, else by
effrt-inspect --list-fatbin; ptxas already assembled every image).

    cuda_compile.py --bin BUILD/bin --work DIR [--cuobjdump PATH]

Prints one line per compile, "NAME: elf sm_80 sm_90 ptx compute_90 PASS",
or "NAME: ... FAIL" with effc's error; exits 1 when any failed.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as t  # noqa: E402
import zoo_llama  # noqa: E402

# (name, model, effc flags): each family at fp32 and in a mixed precision,
# with accumulation, remat, LoRA/QLoRA, the 8-bit and factored optimizers
# spread over them so every pass the cuda pipeline lowers shows up. Device
# and host code at --opt-level 0 (the check is that everything compiles and
# assembles; NVPTX + ptxas at -O3 cost a GPT 15 s here), one case at effc's
# default -O3.
LORA = "--lora=rank=4,alpha=8,targets=c_attn|c_proj|mlp\\.[02]\\.weight"
CASES = [
    ("mlp-fp32-sgd-O3", "mlp", ["--optimizer", "sgd", "--momentum", "0.9",
                                "--opt-level", "3"]),
    ("mlp-bf16-adamw8bit", "mlp", ["--precision", "bf16",
                                   "--optimizer", "adamw8bit"]),
    ("mlp-fp32-adafactor", "mlp", ["--optimizer", "adafactor"]),
    ("cnn-fp32-adamw", "cnn", ["--optimizer", "adamw"]),
    ("cnn-fp16-accum2", "cnn", ["--precision", "fp16", "--accum", "2"]),
    ("gpt-bf16-selective", "gpt", ["--precision", "bf16", "--optimizer",
                                   "adamw", "--remat", "selective"]),
    ("gpt-fp16-full-accum2", "gpt", ["--precision", "fp16", "--remat", "full",
                                     "--accum", "2"]),
    ("gpt-fp32-lora", "gpt", [LORA]),
    ("gpt-bf16-qlora", "gpt", ["--precision", "bf16", LORA, "--qlora"]),
    ("llama-bf16-adamw", "llama", ["--precision", "bf16",
                                   "--optimizer", "adamw"]),
    # 200 parameters: fp16's "found inf" OR over every gradient and the
    # global norm's sum of squares stay within a kernel's 4352 bytes of
    # parameters (one fused op read every flag: convnext_tiny failed ptxas).
    ("deep-mlp-fp16-clip", "deep_mlp", ["--precision", "fp16",
                                        "--clip-grad-norm", "1.0"]),
]


class DeepMLP(torch.nn.Module):
    """100 small Linear layers: 200 parameter tensors."""

    def __init__(self, depth=100, width=8):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(width, width) for _ in range(depth))

    def forward(self, x, y):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return ((x - y) ** 2).mean()


def export_models(work):
    paths = {}
    for name in ("mlp", "cnn", "gpt"):
        model, B, data = t.make(name, 1, 0)
        names = list(data)
        path = os.path.join(work, name + ".onnx")
        t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
                 names, path)
        paths[name] = path
    torch.manual_seed(0)
    path = os.path.join(work, "deep_mlp.onnx")
    t.export(DeepMLP(), (torch.randn(4, 8), torch.randn(4, 8)), ["x", "y"],
             path, output_names=("loss",))
    paths["deep_mlp"] = path
    case = zoo_llama.tiny()
    path = os.path.join(work, "llama.onnx")
    case.write_onnx(path, {k: v.detach().numpy()
                           for k, v in case.model.state_dict().items()})
    paths["llama"] = path
    return paths


def images(args, effx):
    """The fatbin's images as ("elf", "sm_80") / ("ptx", "compute_90")."""
    if args.cuobjdump:
        fatbin = effx + ".fatbin"
        subprocess.run([os.path.join(args.bin, "effrt-inspect"),
                        "--extract-section", "device_code:cuda:kernels",
                        fatbin, effx], check=True)
        found = []
        for flag, kind in (("--list-elf", "elf"), ("--list-ptx", "ptx")):
            out = subprocess.run([args.cuobjdump, flag, fatbin], check=True,
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                # "ELF file    1: kernels.1.sm_80.cubin",
                # "PTX file    1: kernels.1.sm_90.ptx"
                arch = line.rsplit(".", 2)[-2] if "." in line else ""
                if arch.startswith("sm_"):
                    found.append((kind, arch if kind == "elf"
                                  else "compute_" + arch[3:]))
        return found
    out = subprocess.run([os.path.join(args.bin, "effrt-inspect"),
                          "--list-fatbin", effx], check=True,
                         capture_output=True, text=True).stdout
    return [tuple(line.split()[:2]) for line in out.splitlines()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuobjdump")
    ap.add_argument("--only", help="comma-separated case names")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    paths = export_models(args.work)
    failed = 0
    for name, model, flags in CASES:
        if args.only and name not in args.only.split(","):
            continue
        effx = os.path.join(args.work, name + ".effx")
        level = [] if "--opt-level" in flags else ["--opt-level", "0"]
        r = subprocess.run([os.path.join(args.bin, "effc"), paths[model],
                            "--target", "cuda", "-o", effx] + level + flags,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("%s: FAIL %s" % (name, r.stderr.strip().splitlines()[-1:]))
            failed += 1
            continue
        found = images(args, effx)
        elf = sorted(a for k, a in found if k == "elf")
        ptx = sorted(a for k, a in found if k == "ptx")
        ok = elf == ["sm_80", "sm_90"] and ptx == ["compute_90"]
        print("%s: elf %s ptx %s %s" % (name, " ".join(elf), " ".join(ptx),
                                        "PASS" if ok else "FAIL"))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

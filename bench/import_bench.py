#!/usr/bin/env python3
"""Import benchmark: a GPT-2-small-sized model (124M parameters, ~500 MB of
fp32 weights) exported by PyTorch 1.13, imported by effopt-translate.

Prints the import wall time and peak RSS, and the RSS as a multiple of the
weight bytes. Targets (issue "Foundation"): under 10 s and under 2.5x.

usage: /usr/bin/python3 bench/import_bench.py [--translate build/bin/effopt-translate]
       [--out bench/out] [--layers 12] [--width 768] [--seq 128] [--external-data]
"""

import argparse
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.mlp_proj = nn.Linear(4 * width, width)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self, vocab, width, layers, heads, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq, width)
        self.h = nn.ModuleList([Block(width, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.register_buffer("pos", torch.arange(seq))

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(self.pos[: idx.shape[1]])
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--translate", default="build/bin/effopt-translate")
    parser.add_argument("--out", default="bench/out")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--external-data", action="store_true",
                        help="store the weights in a separate file")
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    name = "gpt2_%dx%d%s.onnx" % (args.layers, args.width,
                                  "_external" if args.external_data else "")
    path = os.path.join(args.out, name)
    torch.manual_seed(0)
    model = GPT2(args.vocab, args.width, args.layers, args.heads, args.seq)
    params = sum(p.numel() for p in model.parameters())
    if not os.path.exists(path):
        idx = torch.randint(0, args.vocab, (1, args.seq))
        start = time.time()
        torch.onnx.export(model, (idx, idx), path,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17,
                          input_names=["idx", "targets"], output_names=["loss"])
        if args.external_data:
            import onnx
            m = onnx.load(path)
            onnx.save_model(m, path, save_as_external_data=True,
                            all_tensors_to_one_file=True,
                            location=name + ".data", size_threshold=1024)
        print("exported %s in %.1f s" % (path, time.time() - start))
    weight_bytes = params * 4
    file_bytes = os.path.getsize(path)

    def run(extra):
        """Wall seconds, CPU seconds and peak RSS (KiB) of one import.

        The child's own rusage (wait4) is used: RUSAGE_CHILDREN would count
        this process's pages (PyTorch, the exported model) copied at fork."""
        start = time.time()
        child = subprocess.Popen([args.translate, path] + extra,
                                 stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            sys.exit("effopt-translate failed with status %d" % child.returncode)
        return (time.time() - start, usage.ru_utime + usage.ru_stime,
                usage.ru_maxrss)

    # Free the exporter's memory before measuring.
    del model
    seconds, cpu_seconds, peak_kib = run(["--summary-only"])
    bytecode_seconds, _, _ = run(["--emit-bytecode", "-o", os.devnull])

    print("model: %s (%d layers, width %d, vocab %d, seq %d)" % (
        name, args.layers, args.width, args.vocab, args.seq))
    print("parameters: %.1f M, weights %.1f MB, file %.1f MB" % (
        params / 1e6, weight_bytes / 1e6, file_bytes / 1e6))
    print("import (+ summary): %.2f s wall, %.2f s CPU (target < 10 s)" % (
        seconds, cpu_seconds))
    print("peak RSS: %.1f MB = %.2fx the weight bytes (target < 2.5x)" % (
        peak_kib * 1024 / 1e6, peak_kib * 1024 / weight_bytes))
    print("import + write bytecode: %.2f s" % bytecode_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""eff.attention against PyTorch 1.13: forward and gradients of attention as
people write it, at T = 77 (not a multiple of the kernels' 64-row tiles),
fused by eff-fuse-attention and run by the tiled kernels; also with the
heads split from [B, T, H*D] projections by transposes, which the CPU
lowering folds into the kernels' strides (no copy).

    attention_vs_torch.py --work DIR --bin BUILD/bin [--effc=FLAG ...]

One ONNX model holds every case (grad_rules_vs_torch.py's harness: each
input is x0 + z with x0 frozen and z zero-initialised and trainable, and
one SGD step with lr 1 leaves z == -grad exactly; the loss is
sum(f(x) * R) with R random). The reference is torch.autograd in float64.
Checks, in order:
  - the train step holds exactly as many eff.attention ops as the model has
    attention cases (effc --emit train-step), and no eff.softmax;
  - each case's gradients (of q, k, v, or of the MultiheadAttention's input
    and weights) against PyTorch;
  - dropout: the same model with dropout 0.3 on the probabilities,
    compiled fused and with --fuse-attention=false (eff.dropout then draws
    the masks): the gradients agree to fp32 rounding only if the fused
    kernel drew exactly the masks of the unfused graph.
Prints one line per case and `attention: PASS` or MISMATCH lines.
"""
import argparse
import math
import os
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grad_rules_vs_torch as g  # noqa: E402

B, H, T, D = 2, 2, 77, 16
TK = 70  # keys of the cross-attention case
RNG = np.random.RandomState(77)


def randn(*shape):
    return (RNG.randn(*shape) * 0.5).astype(np.float32)


def causal_attention(q, k, v, tril):
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
    s = s.masked_fill(tril == 0, float("-inf"))
    return F.softmax(s, dim=-1) @ v


def padded_attention(q, k, v, pad):
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    s = s.masked_fill(pad, float("-inf"))
    return torch.softmax(s, -1) @ v


def float_mask_attention(q, k, v, bias):
    s = q @ k.transpose(-2, -1) / math.sqrt(D) + bias
    return torch.softmax(s, -1) @ v


def cross_attention(q, k, v):
    return torch.softmax((q / math.sqrt(D)) @ k.transpose(-2, -1), -1) @ v


def heads(x):
    """[B, T, H*D] -> [B, H, T, D], as exporters write the head split."""
    return x.reshape(B, x.shape[1], H, D).transpose(1, 2)


def merge(o):
    """[B, H, T, D] -> [B, T, H*D]."""
    return o.transpose(1, 2).reshape(B, o.shape[2], H * D)


def qkv_causal_attention(qkv, tril):
    """nanoGPT's block: q, k, v split from one projection, heads split and
    merged by transposes (folded into the kernels' strides)."""
    q, k, v = qkv.split(H * D, dim=2)
    return merge(causal_attention(heads(q), heads(k), heads(v), tril))


def heads_padded_attention(q, k, v, pad):
    return merge(padded_attention(heads(q), heads(k), heads(v), pad))


E, MHA_HEADS = 32, 4


def mha(x, in_w, in_b, out_w, out_b, pad):
    """nn.MultiheadAttention's functional form (what the module calls), with
    a key padding mask; x is [T, B, E]."""
    y, _ = F.multi_head_attention_forward(
        x, x, x, E, MHA_HEADS, in_w, in_b, None, None, False, 0.0, out_w,
        out_b, training=True, key_padding_mask=pad, need_weights=False)
    return y


def causal_dropout(p):
    def fn(q, k, v, tril):
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        s = s.masked_fill(tril == 0, float("-inf"))
        return F.dropout(F.softmax(s, dim=-1), p, True) @ v
    return fn


def cases():
    tril = np.tril(np.ones((T, T), bool))[None, None]
    pad = np.zeros((B, 1, 1, T), bool)
    pad[1, ..., 50:] = True  # the second sequence is 50 tokens long
    bias = (RNG.randn(1, H, T, T) * 0.5).astype(np.float32)
    bias[0, 0, :, 60:] = -np.inf
    mha_pad = np.zeros((B, T), bool)
    mha_pad[0, 64:] = True
    qkv = lambda tq=T, tk=T: [randn(B, H, tq, D), randn(B, H, tk, D),  # noqa
                              randn(B, H, tk, D)]
    w = lambda *s: (RNG.randn(*s) / math.sqrt(s[-1])).astype(np.float32)  # noqa
    return [
        g.Case("causal", causal_attention, qkv(), [tril]),
        g.Case("padding", padded_attention, qkv(), [pad]),
        g.Case("float_mask", float_mask_attention, qkv(), [bias]),
        g.Case("cross", cross_attention, qkv(T, TK)),
        g.Case("qkv_causal", qkv_causal_attention, [randn(B, T, 3 * H * D)],
               [tril]),
        g.Case("heads_padding", heads_padded_attention,
               [randn(B, T, H * D), randn(B, T, H * D), randn(B, T, H * D)],
               [pad]),
        g.Case("mha_padding", mha,
               [randn(T, B, E), w(3 * E, E), randn(3 * E), w(E, E), randn(E)],
               [mha_pad]),
    ]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise SystemExit("FAILED: %s\n%s%s" % (" ".join(cmd), r.stdout,
                                                r.stderr))
    return r.stdout


def compile_and_step(args, work, extra):
    """effc + one effrun step; the train step's IR and the checkpoint."""
    effx = os.path.join(work, "model%s.effx" % len(extra))
    ckpt = os.path.join(work, "step%s.safetensors" % len(extra))
    flags = ["--optimizer", "sgd", "--lr", "1", "--momentum", "0",
             "--weight-decay", "0", "--freeze", "_(x0|r|c[0-9]+)$"]
    flags += args.effc + extra
    onnx_path = os.path.join(work, "model.onnx")
    ir = run([g.tool(args, "effc"), onnx_path, "--emit", "train-step"] +
             flags)
    run([g.tool(args, "effc"), onnx_path, "-o", effx] + flags)
    run([g.tool(args, "effrun"), effx, "--data",
         os.path.join(work, "data.npz"), "--steps", "1", "--save", ckpt,
         "--quiet"])
    return ir, g.read_safetensors(ckpt)


def count_ops(ir, name):
    return len(re.findall(r"= eff\.%s " % re.escape(name), ir))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", help="directory with effc and effrun")
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag (repeatable)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--skip-dropout", action="store_true",
                    help="skip the fused-vs-unfused dropout check (under "
                         "bf16 the unfused products round differently)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    ok = True

    # Every case against torch.autograd.
    all_cases = cases()
    for c in all_cases:
        c.rtol, c.atol = args.rtol, args.atol
    upstream = {c.name: g.upstream_for(c) for c in all_cases}
    work = g.export_group(args, "cases", all_cases, upstream)
    ir, state = compile_and_step(args, work, [])
    fused, softmaxes = count_ops(ir, "attention"), count_ops(ir, "softmax")
    print("fused: %d eff.attention, %d eff.softmax" % (fused, softmaxes))
    if fused != len(all_cases) or softmaxes:
        print("MISMATCH: expected %d eff.attention and no softmax" %
              len(all_cases))
        ok = False
    for c in all_cases:
        good, msg, worst_abs, worst_rel = g.check(c, state, upstream)
        print("%s: %s (max abs %.2e, rel %.2e) %s" %
              (c.name, "ok" if good else "MISMATCH", worst_abs, worst_rel,
               msg))
        ok &= good

    if args.skip_dropout:
        print("attention: %s" % ("PASS" if ok else "FAIL"))
        return 0 if ok else 1

    # Dropout: fused and unfused effopt draw the same masks.
    tril = np.tril(np.ones((T, T), bool))[None, None]
    drop = g.Case("dropout", causal_dropout(0.3),
                  [randn(B, H, T, D), randn(B, H, T, D), randn(B, H, T, D)],
                  [tril])
    up = {drop.name: g.upstream_for(drop)}
    args.work = os.path.join(args.work, "dropout")
    work = g.export_group(args, "dropout", [drop], up)
    ir_fused, fused_state = compile_and_step(args, work, [])
    _, unfused_state = compile_and_step(
        args, work, ["--fuse-attention=false"])
    if count_ops(ir_fused, "attention") != 1 or count_ops(ir_fused, "dropout"):
        print("MISMATCH: dropout attention not fused")
        ok = False
    worst = 0.0
    kept = None
    for i in range(3):
        key = "dropout_in%d_z" % i
        a = fused_state[key].astype(np.float64)
        b = unfused_state[key].astype(np.float64)
        # Relative to the gradient's scale: fp32 rounding gives ~1e-6, one
        # mask bit drawn differently changes whole rows by O(1).
        worst = max(worst, float(np.abs(a - b).max() / np.abs(b).max()))
        if i == 2:  # dV rows: zero only where every kept probability is
            kept = float((b != 0).mean())
    same = worst < 1e-4
    print("dropout: %s (fused vs unfused max |diff| / max |grad| %.2e, dV "
          "nonzero %.3f)" %
          ("ok" if same else "MISMATCH", worst, kept))
    ok &= same
    print("attention: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""effopt against PyTorch eager and torch.compile on one GPU: GPT-2 124M
(12 layers, d 768, 12 heads, T 1024, vocab 50304), bf16 autocast + AdamW.

Two halves, as the GPU suite (docs/GpuSuite.md):

  gpu_vs_torch.py prepare --out DIR --bin BUILD/bin [--target cuda]
      here (PyTorch 1.13, effc): exports the model to ONNX with every
      weight zero (zero state is not stored in the .effx, so it stays a few
      MB instead of 500) and a symbolic batch, compiles it with `effc
      --target T --precision bf16 --optimizer adamw` for each batch size
      (--report-json: the planned bytes), writes DIR/bench.json.
  gpu_vs_torch.py run --dir DIR --effrun PATH [--device-kind cuda|cpu]
      there (PyTorch 2.x): draws the initial weights (numpy, seeded: the
      same on any machine), writes them into an effopt checkpoint
      (effrun --steps 0 --save gives the layout; the state CRC is
      recomputed) and loads them into the same model in PyTorch; picks the
      largest batch that fits both (effopt's plan against the free device
      memory, PyTorch eager by trying); then at that batch: PyTorch eager,
      torch.compile and effrun (--resume from those weights), the same
      random token batches: tokens/s, ms/step, peak memory
      (torch.cuda.max_memory_allocated vs effopt's planned bytes, effrun's
      device_bytes and the whole effrun process's footprint seen through
      cudaMemGetInfo), MFU ((6N + 6 L d T) FLOPs per token over 989 TFLOP/s
      dense bf16, N without the position embedding); the first steps'
      losses of the three must agree (bf16: loosely). Then two probes: the
      device-to-device copy bandwidth, and cuBLAS alone (torch.matmul, bf16)
      on every GEMM shape of one training step.
      Writes OUT/gpu_vs_torch.json and prints a table.

--config tiny (2 layers, d 64, T 64, vocab 512, batches 2,4) runs the same
flow on a CPU in seconds: `--target cpu` + `--device-kind cpu` (dry run).
Works with PyTorch 1.13 (no scaled_dot_product_attention, no
torch.compile: said so, the explicit attention is used) and 2.x.
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import threading
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "scripts", "gpu"))
from suite import FreeMemoryWatch  # noqa: E402  (the GPU suite's probe)

CONFIGS = {
    "gpt2": dict(n_layer=12, d_model=768, n_head=12, block_size=1024,
                 vocab=50304, batches=[8, 16, 32]),
    "tiny": dict(n_layer=2, d_model=64, n_head=4, block_size=64, vocab=512,
                 batches=[2, 4]),
    # The tiny GPT with a vocabulary past 4096 classes: on cuda the loss's
    # log-sum-exp is the online one (one read of the logits).
    "tiny-vocab": dict(n_layer=2, d_model=64, n_head=4, block_size=64,
                       vocab=8192, batches=[2, 4]),
}
# AdamW as nanoGPT trains GPT-2 (both sides).
OPT = dict(lr=6e-4, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1)
PEAK_BF16_FLOPS = 989e12   # H100 SXM dense bf16
OOM = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)


# ---------------------------------------------------------------------------
# The model (the same module is exported here and trained there)
# ---------------------------------------------------------------------------

class Block(nn.Module):
    def __init__(self, d, heads, sdpa):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def attention(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        hs = C // self.heads
        q, k, v = (t.view(B, T, self.heads, hs).transpose(1, 2)
                   for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = att.masked_fill(mask[:T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x, mask):
        x = x + self.attention(self.ln_1(x), mask)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    """GPT-2 small as nanoGPT writes it (pre-LN, learned positions, LM head
    tied to the token embedding, biases, dropout 0), with erf GELU (the
    form effc imports as one op). Returns the mean cross-entropy only: the
    logits are not a graph output (6.6 GB at batch 32)."""

    def __init__(self, cfg, sdpa=False):
        super().__init__()
        d = cfg["d_model"]
        self.wte = nn.Embedding(cfg["vocab"], d)
        self.wpe = nn.Embedding(cfg["block_size"], d)
        self.h = nn.ModuleList(Block(d, cfg["n_head"], sdpa)
                               for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, cfg["vocab"], bias=False)
        self.lm_head.weight = self.wte.weight
        T = cfg["block_size"]
        # One bool causal mask for every layer (a bool buffer: not a
        # trainable initializer); unused with sdpa.
        self.register_buffer("mask", torch.tril(torch.ones(T, T,
                                                           dtype=torch.bool)))

    def forward(self, idx, targets):
        T = idx.shape[1]
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.h:
            x = blk(x, self.mask)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(),
                               targets.view(-1))


def initial_weights(cfg, seed=0):
    """{state_dict name: float32 array}, GPT-2's initialisation drawn with
    numpy (legacy RandomState: the same numbers on every machine and numpy
    version): N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), biases
    0, LayerNorm 1 and 0. The tied LM head is wte.weight."""
    rng = np.random.RandomState(seed)
    model = GPT2(cfg)
    out = {}
    std_proj = 0.02 / math.sqrt(2 * cfg["n_layer"])
    for name, p in model.named_parameters():
        shape = tuple(p.shape)
        if name.endswith("bias"):
            a = np.zeros(shape, np.float32)
        elif ".ln_" in name or name.startswith("ln_f"):
            a = np.ones(shape, np.float32)
        else:
            std = std_proj if name.endswith(("c_proj.weight",
                                             "mlp_proj.weight")) else 0.02
            a = (rng.standard_normal(shape) * std).astype(np.float32)
        out[name] = a
    return out


def n_params(cfg):
    model = GPT2(cfg)
    total = sum(p.numel() for p in model.parameters())   # tied: once
    return total, total - model.wpe.weight.numel()


def flops_per_token(cfg):
    _, n = n_params(cfg)
    return 6 * n + 6 * cfg["n_layer"] * cfg["d_model"] * cfg["block_size"]


# ---------------------------------------------------------------------------
# prepare (here)
# ---------------------------------------------------------------------------

def run_tool(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        raise SystemExit("gpu_vs_torch.py: %s failed (exit %d):\n  %s\n%s%s"
                         % (what, r.returncode, " ".join(cmd), r.stdout,
                            r.stderr))
    return r


def prepare(args):
    import onnx
    cfg = CONFIGS[args.config]
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    model = GPT2(cfg, sdpa=False)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    T = cfg["block_size"]
    ex = torch.zeros(2, T, dtype=torch.long)
    onnx_path = os.path.join(out, "gpt2.onnx")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ex, ex), onnx_path,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17,
                          input_names=["idx", "targets"],
                          output_names=["loss"],
                          dynamic_axes={"idx": {0: "batch"},
                                        "targets": {0: "batch"}})
    m = onnx.load(onnx_path, load_external_data=False)
    names = sorted(t.name for t in m.graph.initializer)
    want = sorted(set(initial_weights(cfg)) - {"lm_head.weight"}) + ["mask"]
    if names != sorted(want):
        raise SystemExit("gpu_vs_torch.py: the ONNX initializers are not the "
                         "model's state: %s" % sorted(set(names) ^ set(want)))
    print("exported %s (%.0f s)" % (onnx_path, time.time() - t0), flush=True)
    batches = [int(b) for b in args.batches.split(",")] if args.batches \
        else cfg["batches"]
    effc = os.path.join(args.bin, "effc")

    def compile_batch(B, stem, extra):
        """Compiles the model at batch B; the variant's entry of bench.json."""
        effx, report = stem + ".effx", stem + ".report.json"
        cmd = [effc, onnx_path, "-o", os.path.join(out, effx),
               "--target", args.target,
               "--shape", "idx=%d,%d" % (B, T),
               "--shape", "targets=%d,%d" % (B, T),
               "--precision", "bf16", "--optimizer", "adamw",
               "--lr", repr(OPT["lr"]), "--beta1", repr(OPT["beta1"]),
               "--beta2", repr(OPT["beta2"]), "--eps", repr(OPT["eps"]),
               "--weight-decay", repr(OPT["weight_decay"]),
               "--report-json", os.path.join(out, report)] + extra
        t1 = time.time()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode != 0:
            # Recorded: the run says FAIL for effopt with effc's words and
            # still measures PyTorch.
            msg = (r.stderr.strip() or r.stdout.strip() or "no output")
            msg = "effc failed: " + msg.splitlines()[-1][:300]
            print("FAILED %s: %s" % (stem, msg), flush=True)
            return dict(effx=effx, report=report, error=msg)
        planned = json.load(open(os.path.join(out, report)))["total_bytes"]
        print("compiled %s: %s, %.1f MB, planned %.2f GiB (%.0f s)" % (
            stem, effx, os.path.getsize(os.path.join(out, effx)) / 1e6,
            planned / 2**30, time.time() - t1), flush=True)
        return dict(effx=effx, report=report, planned=planned)

    variants = {str(B): compile_batch(B, "gpt2.b%d" % B, args.effc)
                for B in batches}
    # The largest batch again with --remat REMAT: the memory side of the
    # trade (a second effopt row in the table).
    remat_variants = {}
    if args.remat and "--remat" not in args.effc:
        B = max(batches)
        remat_variants[str(B)] = []
        for remat in args.remat.split(","):
            v = compile_batch(B, "gpt2.b%d.remat-%s" % (
                B, remat.replace(":", "-")), args.effc + ["--remat", remat])
            v["remat"] = remat
            remat_variants[str(B)].append(v)
    # And with --offload optimizer: AdamW's state and the fp32 master
    # weights in pinned host memory, the update on the CPU (a third row).
    offload_variants = {}
    if args.offload and "--offload" not in args.effc:
        B = max(batches)
        offload_variants[str(B)] = compile_batch(
            B, "gpt2.b%d.offload" % B, args.effc + ["--offload", "optimizer"])
    # And with --loss-chunks 1: the LM head and loss in one piece, the
    # 3.1 GiB of logits live at once (what the default's chunking costs in
    # time and saves in memory).
    unchunked_variants = {}
    if args.unchunked and "--loss-chunks" not in " ".join(args.effc):
        B = max(batches)
        unchunked_variants[str(B)] = compile_batch(
            B, "gpt2.b%d.unchunked" % B, args.effc + ["--loss-chunks", "1"])
    os.remove(onnx_path)   # 500 MB of zeros; the .effx files hold the step
    json.dump(dict(config=args.config, cfg=cfg, target=args.target,
                   variants=variants, remat_variants=remat_variants,
                   offload_variants=offload_variants,
                   unchunked_variants=unchunked_variants, opt=OPT,
                   torch=torch.__version__,
                   created=time.strftime("%Y-%m-%d %H:%M:%S")),
              open(os.path.join(out, "bench.json"), "w"), indent=1)
    print("gpu_vs_torch.py prepare: %d .effx in %s (%.0f s)" % (
        len(variants), out, time.time() - t0))


# ---------------------------------------------------------------------------
# run (there)
# ---------------------------------------------------------------------------

def effx_manifest(path):
    """The JSON manifest of an .effx (docs/Effx.md: header, section table,
    the kind-1 section)."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:8] != b"EFFX\r\n\x1a\n":
            raise SystemExit("%s: not an .effx" % path)
        table_off, = struct.unpack_from("<Q", head, 16)
        count, entry_size = struct.unpack_from("<II", head, 24)
        f.seek(table_off)
        table = f.read(count * entry_size)
        for i in range(count):
            e = table[i * entry_size:(i + 1) * entry_size]
            kind, = struct.unpack_from("<I", e, 0)
            off, size = struct.unpack_from("<QQ", e, 72)
            if kind == 1:
                f.seek(off)
                return json.loads(f.read(size))
    raise SystemExit("%s: no manifest section" % path)


def read_safetensors(path):
    raw = open(path, "rb").read()
    n, = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    return raw, header, 8 + n


def write_init_checkpoint(template, effx, weights, dest):
    """`template` (effrun --steps 0 --save) with the parameters replaced by
    `weights`; the metadata's state_crc32 recomputed over the entries in
    manifest order (docs/Effx.md, Checkpoints)."""
    raw, header, base = read_safetensors(template)
    meta = header.get("__metadata__", {})
    body = bytearray(raw[base:])
    # The template's own CRC first: proves the order is understood.
    order = [e["name"] for e in effx_manifest(effx)["state"]]

    def crc_of(buf):
        c = 0
        for name in order:
            a, b = header[name]["data_offsets"]
            c = zlib.crc32(bytes(buf[a:b]), c)
        return "%08x" % c
    if meta.get("state_crc32") not in (None, crc_of(body)):
        raise SystemExit("%s: state_crc32 %s is not the CRC-32 of the "
                         "tensors in manifest order (%s): checkpoint format "
                         "changed?" % (template, meta.get("state_crc32"),
                                       crc_of(body)))
    replaced = 0
    for name, a in weights.items():
        if name not in header:
            continue
        e = header[name]
        if e["dtype"] != "F32" or list(e["shape"]) != list(a.shape):
            raise SystemExit("%s: %s is %s %s, the weights %s" % (
                template, name, e["dtype"], e["shape"], a.shape))
        lo, hi = e["data_offsets"]
        body[lo:hi] = np.ascontiguousarray(a, np.float32).tobytes()
        replaced += 1
    if meta.get("state_crc32") is not None:
        meta["state_crc32"] = crc_of(body)
    header["__metadata__"] = meta
    # Same data offsets; the header re-serialised (padded to 8 bytes).
    hjson = json.dumps(header, separators=(",", ":")).encode()
    hjson += b" " * (-len(hjson) % 8)
    with open(dest, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        f.write(body)
    return replaced


class Timer:
    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def time_ms(self, fn, reps, warmup=1):
        for _ in range(warmup):
            fn()
        self.sync()
        if self.cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / reps
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - t0) * 1000.0 / reps


def make_batches(cfg, B, steps, seed=1):
    rng = np.random.RandomState(seed)
    T = cfg["block_size"]
    win = rng.randint(0, 50257 if cfg["vocab"] > 50257 else cfg["vocab"],
                      size=(steps * B, T + 1)).astype(np.int64)
    return {"idx": win[:, :-1].copy(), "targets": win[:, 1:].copy()}


def torch_run(cfg, weights, data, B, steps, warmup, device, compiled):
    """(losses, ms per timed step, peak allocated bytes, peak reserved)."""
    sdpa = hasattr(F, "scaled_dot_product_attention")
    model = GPT2(cfg, sdpa=sdpa).to(device)
    sd = {k: torch.from_numpy(v) for k, v in weights.items()}
    sd["mask"] = model.mask
    sd["lm_head.weight"] = sd["wte.weight"]   # tied
    model.load_state_dict(sd, strict=True)
    model.train()
    kw = {}
    if device.type == "cuda":
        kw["fused"] = True
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=OPT["lr"],
                                betas=(OPT["beta1"], OPT["beta2"]),
                                eps=OPT["eps"],
                                weight_decay=OPT["weight_decay"], **kw)
    except (TypeError, RuntimeError):
        opt = torch.optim.AdamW(model.parameters(), lr=OPT["lr"],
                                betas=(OPT["beta1"], OPT["beta2"]),
                                eps=OPT["eps"],
                                weight_decay=OPT["weight_decay"])
    fwd = torch.compile(model) if compiled else model
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    losses, times = [], []
    timer = Timer(device)
    for i in range(warmup + steps):
        idx = torch.from_numpy(data["idx"][i * B:(i + 1) * B]).to(device)
        tgt = torch.from_numpy(data["targets"][i * B:(i + 1) * B]).to(device)
        timer.sync()
        t0 = time.perf_counter()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = fwd(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss))   # synchronises
        times.append((time.perf_counter() - t0) * 1000.0)
    peak = torch.cuda.max_memory_allocated() if device.type == "cuda" else None
    reserved = torch.cuda.max_memory_reserved() if device.type == "cuda" \
        else None
    del model, opt, fwd
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return losses, float(np.median(times[warmup:])), peak, reserved


def effopt_run(args, v, B, weights, data, steps, warmup, device, work,
               profile):
    """(losses, ms per timed step, log rows, process footprint) of the
    compiled variant v (an entry of bench.json) or raises RuntimeError with
    effrun's message."""
    if "error" in v:
        raise RuntimeError(v["error"])
    effx = os.path.join(args.dir, v["effx"])
    npz = os.path.join(work, "tokens.b%d.npz" % B)
    np.savez(npz, **data)
    env = dict(os.environ)

    def effrun(extra):
        cmd = [args.effrun, effx, "--data", npz, "--quiet"] + extra
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           env=env)
        if r.returncode != 0:
            msg = (r.stderr.strip() or "no output").splitlines()[-1]
            raise RuntimeError("effrun exit %d: %s" % (r.returncode, msg))
    zero = os.path.join(work, "zero.b%d.safetensors" % B)
    init = os.path.join(work, "init.b%d.safetensors" % B)
    effrun(["--steps", "0", "--save", zero])
    n = write_init_checkpoint(zero, effx, weights, init)
    os.remove(zero)
    log = os.path.join(work, "effrun.b%d.jsonl" % B)
    if os.path.exists(log):
        os.remove(log)   # --resume appends to a log
    # Wall clock too, in case the log's per-step times miss asynchronous
    # work: (a run of W+S steps - a run of the W warm-up steps, same
    # loading) / S; the warm-up (first-launch setup, GEMM plans) is left
    # out, as it is of the torch timings.
    t0 = time.perf_counter()
    effrun(["--steps", str(warmup), "--resume", init])
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with FreeMemoryWatch(device.type == "cuda") as watch:
        effrun(["--steps", str(warmup + steps), "--resume", init,
                "--log", log])
    run_s = time.perf_counter() - t0
    if profile:
        try:
            result_profile = ncu_profile(args, effx, npz, init, work)
        except Exception as e:   # noqa: BLE001 - a profile never fails the bench
            result_profile = dict(error="profile failed: %s" % e)
    else:
        result_profile = None
    os.remove(init)
    rows = [json.loads(l) for l in open(log)]
    losses = [r["loss"] for r in rows]
    ms_log = float(np.median([r["time_ms"] for r in rows[warmup:]]))
    ms_wall = max(0.0, run_s - load_s) * 1000.0 / steps
    return losses, ms_log, ms_wall, rows, watch.taken(), n, result_profile


NCU_METRICS = "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum"
GEMM_KERNEL = re.compile(r"gemm|xmma|nvjet|cutlass|cublas", re.I)
UNITS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6,
         "msecond": 1e-3, "ms": 1e-3, "second": 1.0, "s": 1.0,
         "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9,
         "KB": 1e3, "MB": 1e6, "GB": 1e9, "": 1.0}


def find_ncu():
    import glob
    import shutil
    for c in [shutil.which("ncu"), "/usr/local/cuda/bin/ncu"] + sorted(
            glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True):
        if c and os.path.exists(c):
            return c
    return None


def parse_ncu_csv(text):
    """[{name, seconds, bytes}] per profiled kernel of `ncu --csv` output
    (one row per kernel and metric)."""
    import csv
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')),
                 None)
    if start is None:
        raise ValueError("no CSV header (\"ID\", ...) in ncu's output")
    kernels = {}
    for row in csv.DictReader(lines[start:]):
        name = (row.get("Kernel Name") or row.get("Function Name")
                or row.get("Name") or "?")
        k = kernels.setdefault(row["ID"], dict(name=name,
                                               seconds=0.0, bytes=0.0))
        unit = row.get("Metric Unit", "") or ""
        value = float(row["Metric Value"].replace(",", "")) * UNITS.get(
            unit, 1.0)
        if row["Metric Name"].startswith("gpu__time_duration"):
            k["seconds"] += value
        elif row["Metric Name"].startswith("dram__bytes"):
            k["bytes"] += value
    return list(kernels.values())


def ncu_profile(args, effx, npz, init, work):
    """One eager step of effrun under Nsight Compute: each kernel's time
    and DRAM bytes. cuBLASLt's kernels (by name) against effopt's own."""
    ncu = find_ncu()
    if ncu is None:
        return dict(error="no ncu on this machine")
    log = os.path.join(work, "ncu.csv")
    cmd = [ncu, "--csv", "--print-units", "base", "--replay-mode",
           "application", "--target-processes", "all", "--metrics",
           NCU_METRICS, "--log-file", log, args.effrun, effx, "--data", npz,
           "--steps", "1", "--resume", init, "--quiet"]
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=args.profile_timeout)
    if r.returncode != 0 or not os.path.exists(log):
        return dict(error="ncu exit %d: %s" % (r.returncode, (
            r.stdout.strip() or "no output").splitlines()[-1][:300]))
    kernels = parse_ncu_csv(open(log).read())
    gemm = [k for k in kernels if GEMM_KERNEL.search(k["name"])]
    own = [k for k in kernels if not GEMM_KERNEL.search(k["name"])]
    return dict(seconds=time.time() - t0, kernels=kernels,
                gemm_s=sum(k["seconds"] for k in gemm), gemm_n=len(gemm),
                own_s=sum(k["seconds"] for k in own), own_n=len(own),
                own_bytes=sum(k["bytes"] for k in own))


def say_profile(say, prof, copy_gbs, gemm_rows):
    """The profile's summary; gemm_rows: gemm_probe's rows (None: no
    probe). With fused attention (effrt_attn kernels) the step's cuBLASLt
    GEMMs are the linear layers only, so that is the floor they meet."""
    if prof is None:
        return
    if "error" in prof:
        say("profile: %s" % prof["error"])
        return
    total = prof["gemm_s"] + prof["own_s"]
    fused_attention = any(k["name"].startswith("effrt_attn")
                          for k in prof["kernels"])
    gemm_floor_ms = None
    if gemm_rows:
        gemm_floor_ms = sum(r["ms"] * r["count"] for r in gemm_rows
                            if not (fused_attention and
                                    r["gemm"].startswith("attn")))
    say("")
    say("profile (ncu, one eager effrun step; %.0f s): %d kernels, %.2f ms "
        "of kernel time" % (prof["seconds"], len(prof["kernels"]),
                            total * 1e3))
    say("  GEMMs (cuBLASLt kernels): %d, %.2f ms%s" % (
        prof["gemm_n"], prof["gemm_s"] * 1e3,
        "; cuBLAS alone on the step's %sshapes %.2f ms: %.2fx (goal <= 1.10)"
        % ("linear-layer " if fused_attention else "", gemm_floor_ms,
           prof["gemm_s"] * 1e3 / gemm_floor_ms)
        if gemm_floor_ms else ""))
    if prof["own_s"] > 0:
        bw = prof["own_bytes"] / prof["own_s"] / 1e9
        say("  effopt's kernels: %d, %.2f ms, %.2f GB of DRAM traffic: %.0f "
            "GB/s on average%s" % (
                prof["own_n"], prof["own_s"] * 1e3, prof["own_bytes"] / 1e9,
                bw, ", %.0f%% of the copy bandwidth (goal >= 70%%)"
                % (100 * bw / copy_gbs) if copy_gbs else ""))
        if copy_gbs:
            slow = [k for k in prof["kernels"]
                    if not GEMM_KERNEL.search(k["name"]) and k["seconds"] > 0
                    and k["bytes"] / k["seconds"] / 1e9 < 0.7 * copy_gbs]
            say("  below 70%% of copy bandwidth: %d kernels, %.2f ms" % (
                len(slow), sum(k["seconds"] for k in slow) * 1e3))
    # effopt's kernels are named after their strategy and place in the step
    # (effx_<strategy>_<N>, eff-gpu-form-kernels): time per strategy.
    kinds = {}
    for k in prof["kernels"]:
        kind = "cuBLASLt GEMM" if GEMM_KERNEL.search(k["name"]) else \
            re.sub(r"_[0-9]+$", "", k["name"])
        n, sec, byt = kinds.get(kind, (0, 0.0, 0.0))
        kinds[kind] = (n + 1, sec + k["seconds"], byt + k["bytes"])
    say("  by kind:")
    for kind, (n, sec, byt) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        say("    %8.3f ms %5d kernels %7.0f GB/s  %s" % (
            sec * 1e3, n, byt / max(sec, 1e-12) / 1e9, kind[:60]))
    say("  the 10 longest kernels:")
    for k in sorted(prof["kernels"], key=lambda k: -k["seconds"])[:10]:
        say("    %8.3f ms %7.0f GB/s  %s" % (
            k["seconds"] * 1e3, k["bytes"] / max(k["seconds"], 1e-12) / 1e9,
            k["name"][:90]))


def copy_probe(device, timer):
    n = (1 << 28) if device.type == "cuda" else (1 << 24)   # 1 GiB / 64 MiB
    src = torch.empty(n, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    ms = timer.time_ms(lambda: dst.copy_(src), reps=20, warmup=3)
    gbs = 2 * src.numel() * 4 / (ms / 1e3) / 1e9   # read + written
    return dict(bytes=n * 4, ms=ms, gb_per_s=gbs)


def gemm_probe(cfg, B, device, timer):
    """cuBLAS alone (torch.matmul, bf16 in, fp32 accumulation) on every
    GEMM of one training step: forward, and the two backward products of
    each. Returns rows and the sum over the step (per-layer shapes x L)."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = \
            False
    dt = torch.bfloat16
    d, L, T, V, H = (cfg["d_model"], cfg["n_layer"], cfg["block_size"],
                     cfg["vocab"], cfg["n_head"])
    M = B * T
    linears = [("c_attn", d, 3 * d, L), ("c_proj", d, d, L),
               ("c_fc", d, 4 * d, L), ("mlp_proj", 4 * d, d, L),
               ("lm_head", d, V, 1)]
    rows, total_ms, total_flops = [], 0.0, 0.0

    def bench(label, a_shape, b_shape, count, transpose_b=False):
        nonlocal total_ms, total_flops
        a = torch.randn(*a_shape, device=device, dtype=dt)
        b = torch.randn(*b_shape, device=device, dtype=dt)
        if transpose_b:
            fn = (lambda: torch.matmul(a, b.transpose(-2, -1)))
        else:
            fn = (lambda: torch.matmul(a, b))
        ms = timer.time_ms(fn, reps=10 if device.type == "cuda" else 2,
                           warmup=2)
        k = a_shape[-1]
        m = a_shape[-2]
        nn_ = b_shape[-2] if transpose_b else b_shape[-1]
        batch = a_shape[0] if len(a_shape) == 3 else 1
        flops = 2.0 * batch * m * nn_ * k
        rows.append(dict(gemm=label, m=m, n=nn_, k=k, batch=batch,
                         count=count, ms=ms, tflops=flops / (ms / 1e3) / 1e12))
        total_ms += ms * count
        total_flops += flops * count
    for name, fin, fout, count in linears:
        bench(name + " fwd", (M, fin), (fout, fin), count, transpose_b=True)
        bench(name + " dX", (M, fout), (fout, fin), count)
        bench(name + " dW", (fout, M), (M, fin), count)
    hs = d // H
    bench("attn QK^T fwd", (B * H, T, hs), (B * H, T, hs), L,
          transpose_b=True)
    bench("attn PV fwd", (B * H, T, T), (B * H, T, hs), L)
    # backward: dP = dY V^T, dV = P^T dY, dQ = dS K, dK = dS^T Q
    bench("attn dP", (B * H, T, hs), (B * H, T, hs), L, transpose_b=True)
    bench("attn dV", (B * H, T, T), (B * H, T, hs), L)
    bench("attn dQ", (B * H, T, T), (B * H, T, hs), L)
    bench("attn dK", (B * H, T, T), (B * H, T, hs), L)
    return rows, total_ms, total_flops


def run(args):
    bench = json.load(open(os.path.join(args.dir, "bench.json")))
    cfg = bench["cfg"]
    out = args.out or os.environ.get("OUT") or os.path.join(args.dir,
                                                             "out-bench")
    os.makedirs(out, exist_ok=True)
    work = os.path.join(args.dir, "work-bench")
    os.makedirs(work, exist_ok=True)
    result = dict(config=bench["config"], cfg=cfg, torch=torch.__version__)
    lines = []

    def say(line):
        print(line, flush=True)
        lines.append(line)

    def finish(status):
        result["status"] = status
        json.dump(result, open(os.path.join(out, "gpu_vs_torch.json"), "w"),
                  indent=1, default=str)
        say("gpu_vs_torch: %s; %s" % (status, os.path.join(
            out, "gpu_vs_torch.json")))
        return 0 if status == "PASS" else (3 if status == "UNSUPPORTED" else 1)

    if args.device_kind == "cuda":
        if not torch.cuda.is_available():
            say("UNSUPPORTED bench: no CUDA GPU visible to PyTorch %s"
                % torch.__version__)
            return finish("UNSUPPORTED")
        device = torch.device("cuda:0")
        props = torch.cuda.get_device_properties(0)
        result["device"] = "%s, %d MiB" % (props.name,
                                           props.total_memory >> 20)
        want_target = "cuda"
    else:
        device = torch.device("cpu")
        result["device"] = "cpu (dry run)"
        want_target = "cpu"
    if bench["target"] != want_target and not (
            want_target == "cpu" and bench["target"] == "cuda-emulated"):
        say("FAIL bench: the .effx files are --target %s, --device-kind %s "
            "needs %s" % (bench["target"], args.device_kind, want_target))
        return finish("FAIL")
    say("bench: GPT-2 %s (L %d, d %d, T %d, vocab %d) on %s, torch %s" % (
        bench["config"], cfg["n_layer"], cfg["d_model"], cfg["block_size"],
        cfg["vocab"], result["device"], torch.__version__))
    timer = Timer(device)
    weights = initial_weights(cfg, seed=0)
    total, n_no_pos = n_params(cfg)
    fpt = flops_per_token(cfg)
    result.update(params=total, params_mfu=n_no_pos, flops_per_token=fpt)
    steps, warmup = args.steps, args.warmup
    has_compile = hasattr(torch, "compile")

    # The largest batch that fits both.
    batches = sorted((int(b) for b in bench["variants"]), reverse=True)
    free = torch.cuda.mem_get_info()[0] if device.type == "cuda" else None
    chosen, eager = None, None
    for B in batches:
        planned = bench["variants"][str(B)].get("planned", 0)
        if free is not None and planned > free:
            say("batch %d: effopt plans %.2f GiB, %.2f GiB free: skipped"
                % (B, planned / 2**30, free / 2**30))
            continue
        data = make_batches(cfg, B, warmup + steps)
        try:
            eager = torch_run(cfg, weights, data, B, steps, warmup, device,
                              compiled=False)
        except OOM as e:
            say("batch %d: PyTorch eager out of memory (%s)" % (
                B, str(e).splitlines()[0][:100]))
            torch.cuda.empty_cache()
            continue
        chosen = B
        break
    if chosen is None:
        say("FAIL bench: no batch size fits both")
        return finish("FAIL")
    B = chosen
    tokens = B * cfg["block_size"]
    result["batch"] = B
    systems = {}
    systems["torch eager"] = dict(zip(("losses", "ms", "peak", "reserved"),
                                      eager))
    if has_compile:
        try:
            t0 = time.time()
            systems["torch.compile"] = dict(zip(
                ("losses", "ms", "peak", "reserved"),
                torch_run(cfg, weights, data, B, steps, warmup, device,
                          compiled=True)))
            systems["torch.compile"]["note"] = "incl. compile: %.0f s" % (
                time.time() - t0)
        except Exception as e:   # noqa: BLE001 - report, go on
            say("torch.compile failed: %s" % str(e).splitlines()[0][:200])
    else:
        say("UNSUPPORTED torch.compile: PyTorch %s has none" %
            torch.__version__)
    status = "PASS"
    # effopt as compiled (profiled), then the --remat variant, if any.
    runs = [("effopt", bench["variants"][str(B)], args.profile)]
    for rv in bench.get("remat_variants", {}).get(str(B), []):
        runs.append(("effopt remat %s" % rv["remat"], rv, False))
    ov = bench.get("offload_variants", {}).get(str(B))
    if ov:
        runs.append(("effopt offload", ov, False))
    uv = bench.get("unchunked_variants", {}).get(str(B))
    if uv:
        runs.append(("effopt unchunked loss", uv, False))
    for name, v, profile in runs:
        try:
            losses, ms_log, ms_wall, rows, footprint, n, prof = effopt_run(
                args, v, B, weights, data, steps, warmup, device, work,
                profile)
            # The slower of the two.
            ms = max(ms_log, ms_wall)
            say("%s: %.2f ms/step in effrun's log (median), %.2f by the "
                "wall clock (%d steps after %d of warm-up, loading "
                "subtracted)" % (name, ms_log, ms_wall, steps, warmup))
            systems[name] = dict(losses=losses, ms=ms, ms_log=ms_log,
                                 ms_wall=ms_wall, planned=v.get("planned"),
                                 allocated=rows[0].get("allocated_bytes"),
                                 device=rows[0].get("device_bytes"),
                                 footprint=footprint, tensors_loaded=n,
                                 effopt=True)
            if profile:
                result["profile"] = prof
            if n != len(weights):
                say("FAIL %s: %d of the %d weights are in effrun's "
                    "checkpoint" % (name, n, len(weights)))
                status = "FAIL"
        except RuntimeError as e:
            say("FAIL %s: %s" % (name, e))
            status = "FAIL"

    # Losses: every system's first steps against eager's (bf16: loose).
    ref = systems["torch eager"]["losses"]
    for name, s in systems.items():
        if name == "torch eager":
            continue
        got = s["losses"]
        worst = max(abs(g - r) / abs(r) for g, r in zip(got, ref)) \
            if got and all(g is not None for g in got) else float("inf")
        s["loss_rel_err"] = worst
        ok = len(got) == len(ref) and worst <= args.loss_rtol
        say("%s %s: losses of %d steps vs eager: worst rel.err %.2e%s" % (
            "PASS" if ok else "FAIL", name, len(got), worst,
            "" if ok else " (> %.0e)" % args.loss_rtol))
        if not ok and s.get("effopt"):
            status = "FAIL"
    for name, s in systems.items():
        if not s.get("effopt"):
            continue
        if s["device"] is None and device.type == "cuda":
            say("FAIL %s: effrun's log has no device_bytes (the drop of "
                "cuMemGetInfo's free bytes across the model's allocation)"
                % name)
            status = "FAIL"
        elif s["device"] is not None and not (
                s["planned"] <= s["device"] < s["planned"] + (8 << 20)):
            say("FAIL %s: planned %d bytes, device_bytes %d" % (
                name, s["planned"], s["device"]))
            status = "FAIL"

    # The table.
    def gib(x):
        return "-" if x is None else "%.2f" % (x / 2**30)
    say("")
    say("batch %d x %d tokens; MFU = tokens/s x %.3g FLOP/token / %.0f "
        "TFLOP/s" % (B, cfg["block_size"], fpt, PEAK_BF16_FLOPS / 1e12))
    say("%-22s %9s %11s %7s %10s %10s %10s %s" % (
        "system", "ms/step", "tokens/s", "MFU", "peak GiB", "planned",
        "device", "notes"))
    compiled_tps = None
    for name, s in systems.items():
        tps = tokens / (s["ms"] / 1e3)
        s["tokens_per_s"] = tps
        s["mfu"] = tps * fpt / PEAK_BF16_FLOPS
        if name == "torch.compile":
            compiled_tps = (tps, s.get("peak"))
        peak = s.get("peak", s.get("footprint"))
        note = s.get("note", "")
        if s.get("effopt"):
            note = "peak = whole effrun process (cudaMemGetInfo), " \
                   "allocated %s" % gib(s.get("allocated"))
        say("%-22s %9.2f %11.0f %6.1f%% %10s %10s %10s %s" % (
            name, s["ms"], tps, 100 * s["mfu"], gib(peak),
            gib(s.get("planned")), gib(s.get("device")), note))
    result["ratios_vs_compile"] = {}
    for name, e in systems.items():
        if not (compiled_tps and e.get("effopt")):
            continue
        mem = e.get("device") or e.get("planned")
        tokens_ratio = e["tokens_per_s"] / compiled_tps[0]
        memory_ratio = mem / compiled_tps[1] if compiled_tps[1] else None
        result["ratios_vs_compile"][name] = dict(tokens=tokens_ratio,
                                                 memory=memory_ratio)
        if name == "effopt":
            result["ratio_tokens_vs_compile"] = tokens_ratio
            result["ratio_memory_vs_compile"] = memory_ratio
        say("%s / torch.compile: %.2fx tokens/s (goal >= 1.0), %s x "
            "peak memory (goal <= 0.8; effopt's device bytes or plan vs "
            "max_memory_allocated)" % (
                name, tokens_ratio,
                "%.2f" % memory_ratio if memory_ratio else "-"))
    result["systems"] = systems

    # Probes.
    if not args.no_probes:
        cp = copy_probe(device, timer)
        result["copy_probe"] = cp
        say("")
        say("copy probe: %.0f MiB copied in %.3f ms: %.0f GB/s (read + "
            "written); 70%% of it: %.0f GB/s (the fused-elementwise goal)" % (
                cp["bytes"] / 2**20, cp["ms"], cp["gb_per_s"],
                0.7 * cp["gb_per_s"]))
        rows, gemm_ms, gemm_flops = gemm_probe(cfg, B, device, timer)
        result["gemm_probe"] = dict(rows=rows, step_ms=gemm_ms,
                                    step_flops=gemm_flops)
        say("cuBLAS alone (torch.matmul bf16) on the step's GEMM shapes, "
            "batch %d:" % B)
        say("  %-16s %7s %7s %7s %5s %4s %9s %8s" % (
            "gemm", "m", "n", "k", "batch", "x", "ms", "TFLOP/s"))
        for r in rows:
            say("  %-16s %7d %7d %7d %5d %4d %9.3f %8.1f" % (
                r["gemm"], r["m"], r["n"], r["k"], r["batch"], r["count"],
                r["ms"], r["tflops"]))
        say("  all GEMMs of one step: %.2f ms (%.1f TFLOP/s)%s" % (
            gemm_ms, gemm_flops / (gemm_ms / 1e3) / 1e12,
            "; effopt's step %.2f ms: GEMMs alone would be %.0f%% of it"
            % (systems["effopt"]["ms"], 100 * gemm_ms /
               systems["effopt"]["ms"]) if "effopt" in systems else ""))
        say_profile(say, result.get("profile"), cp["gb_per_s"], rows)
    else:
        say_profile(say, result.get("profile"), None, None)
    return finish(status)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--bin", required=True)
    p.add_argument("--target", default="cuda",
                   choices=["cuda", "cpu", "cuda-emulated"],
                   help="cuda-emulated: the cuda step's kernels emulated on "
                        "the CPU (run with --device-kind cpu)")
    p.add_argument("--config", default="gpt2", choices=sorted(CONFIGS))
    p.add_argument("--batches", default="", help="default: the config's")
    p.add_argument("--effc", action="append", default=[],
                   help="an extra effc flag")
    p.add_argument("--remat", default="selective,budget:12500000000",
                   help="also compile the largest batch with each --remat "
                        "REMAT of this comma-separated list (an effopt row "
                        "each; '' for none). The default budget, 12.5e9 "
                        "bytes (11.64 GiB), is 0.77x torch.compile's peak "
                        "at batch 32 on an H100 (15.14 GiB, stops 27-28): "
                        "the least recomputation that meets the memory "
                        "goal")
    p.add_argument("--offload", action=argparse.BooleanOptionalAction,
                   default=True,
                   help="also compile the largest batch with --offload "
                        "optimizer (a third effopt row)")
    p.add_argument("--unchunked", action=argparse.BooleanOptionalAction,
                   default=True,
                   help="also compile the largest batch with --loss-chunks 1 "
                        "(the LM head and loss unchunked: a fourth row)")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--effrun", required=True)
    r.add_argument("--device-kind", default="cuda", choices=["cuda", "cpu"])
    r.add_argument("--out", default="")
    r.add_argument("--steps", type=int, default=10, help="timed steps")
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--loss-rtol", type=float, default=2e-2)
    r.add_argument("--no-probes", action="store_true")
    r.add_argument("--profile", action="store_true",
                   help="also one effrun step under Nsight Compute (ncu): "
                        "each kernel's time and DRAM bytes (about a minute)")
    r.add_argument("--profile-timeout", type=int, default=150)
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args)
    elif args.cmd == "run":
        sys.exit(run(args))
    else:
        ap.error("prepare or run")


if __name__ == "__main__":
    main()

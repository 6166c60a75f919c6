#!/usr/bin/env python3
"""The GPU suite: effopt trains on a GPU as PyTorch does on the same GPU.

Two halves, because the GPU machine has no LLVM/MLIR (no effc) and this one
has no GPU:

  suite.py prepare --out DIR --bin BUILD/bin [--target cuda|cpu]
      (here, PyTorch 1.13) exports every model, writes its data (.npz) and
      its initial PyTorch state (.npz), compiles every variant with
      `effc --target T` (+ --report-json) and writes DIR/suite.json.
  suite.py run --dir DIR --effrun PATH [--device-kind cuda|cpu] [--out OUT]
      (there, PyTorch 2.x; or here for a dry run with --device-kind cpu)
      trains every variant with effrun and the same model with PyTorch on
      the same device from the same initial state and batches, and checks:
        train:*     losses and final state against PyTorch (fp32: TF32 off
                    on both sides, tolerances of the CPU E2E tests;
                    bf16/fp16: loose, bounded; attention on the runtime's
                    kernels, effc's default); *-unfused: the same with
                    effc --fuse-attention=false (batched GEMMs + softmax);
                    the CNN's convolutions through cuDNN (effc's default
                    on cuda) and, as cnn-im2col, columns + GEMMs
        remat:*     --remat selective/full bit-identical to none (losses
                    and every checkpoint tensor)
        resume:*    6 steps == 3 steps, --save, --resume, 3 more (bits)
        graphs:*    CUDA graph replay == EFFRT_CUDA_GRAPHS=0 (bits)
        nccl:*      the GPT compiled with --zero 1 / --zero 3 at world size
                    1 with its collectives kept (effc
                    --zero-one-rank-collectives), run with effrun --nccl:
                    NCCL's collectives inside the captured step; the same
                    bits as the single-rank copies (effrun without --nccl),
                    the --zero 0 run (no collectives) and PyTorch within
                    fp32 tolerance, planned == allocated bytes
        xdev:*      a GPU checkpoint resumed by the CPU twin of the model
                    (compiled here with --target cpu) and back, against
                    the uninterrupted GPU run (fp32 tolerance)
        memory:*    planned bytes (effc's report) == effrun's allocated
                    bytes == device bytes (effrun's log field
                    `device_bytes`: the drop of cuMemGetInfo's free bytes
                    across the model's allocation)
        offload:*   effc --offload optimizer (the optimizer's state, and in
                    bf16 the fp32 master weights, in pinned host memory;
                    the update on the CPU as host tasks on a second
                    stream): against the same GPU's run without offload
                    (fp32: the fp32 tolerance; bf16: the loose bounds of
                    train:*); train:gpt-offload-* checks it against PyTorch
        refuse:*    a cuda .effx with no GPU visible: one line, exit != 0
      Prints one line per check (PASS/FAIL/UNSUPPORTED), a table, and
      writes OUT/gpu_suite.json. Exit 0 all passed, 1 something failed,
      3 nothing could run (no GPU: every check UNSUPPORTED, never PASS).
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
E2E = os.path.join(SRC, "test", "E2E", "lib")
sys.path.insert(0, E2E)
sys.path.insert(0, os.path.join(SRC, "examples"))
sys.path.insert(0, os.path.join(SRC, "examples", "llama"))

import torch  # noqa: E402

import export_examples as ex  # noqa: E402
import train_vs_torch as tv  # noqa: E402

GPT_SPEC = dict(vocab=256, block_size=32, n_layer=2, d_model=64, n_head=4)
GRANULE = 2 << 20   # the CUDA driver's allocation granularity
LORA_TARGETS = r"c_attn|c_proj|mlp\.[02]\.weight"

# Optimizer settings of each model (effc's flag names, as tv.add_training_args).
OPT_DEFAULTS = dict(optimizer="adamw", lr=0.003, momentum=0.0, nesterov=False,
                    weight_decay=0.01, beta1=0.9, beta2=0.999, eps=1e-8,
                    schedule="constant", warmup_steps=0, total_steps=0,
                    min_lr=0.0, clip_grad_norm=0.0)


def opt_ns(**kw):
    d = dict(OPT_DEFAULTS)
    d.update(kw)
    return d


# ---------------------------------------------------------------------------
# Models: built the same way here (to export) and there (to train in torch)
# ---------------------------------------------------------------------------

def build_model(spec):
    """The PyTorch module of a case, without its weights (they come from the
    case's init .npz)."""
    kind = spec["kind"]
    if kind == "mlp":
        return ex.MLP()
    if kind == "cnn":
        model = ex.CNN()
        for i in (0, 4):   # as tv.make: no conv bias before BatchNorm
            model.features[i].bias = None
        return model
    if kind == "gpt":
        return ex.GPT(vocab=spec["vocab"], block_size=spec["block_size"],
                      n_layer=spec["n_layer"], d_model=spec["d_model"],
                      n_head=spec["n_head"], dropout=spec.get("dropout", 0.0))
    if kind == "llama":
        import zoo_llama
        import make_llama_onnx as gen
        return zoo_llama.LlamaForCausalLM(dict(gen.CONFIGS["tiny"]),
                                          spec["seq"])
    raise SystemExit("suite.py: unknown model kind %r" % kind)


def save_npz(path, arrays):
    np.savez(path, **{k: np.ascontiguousarray(v) for k, v in arrays.items()})


def load_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def state_arrays(model):
    return {k: v.detach().cpu().numpy().copy()
            for k, v in model.state_dict().items()}


# ---------------------------------------------------------------------------
# prepare (here: PyTorch 1.13 and effc)
# ---------------------------------------------------------------------------

def run_tool(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        raise SystemExit("suite.py prepare: %s failed (exit %d):\n  %s\n%s%s"
                         % (what, r.returncode, " ".join(cmd), r.stdout,
                            r.stderr))
    return r


def effc_opt_flags(o):
    ns = types.SimpleNamespace(**o)
    return tv.effc_flags(ns)


def prepare(args):
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    effc = os.path.join(args.bin, "effc")
    if not os.path.exists(effc):
        raise SystemExit("suite.py prepare: no effc at %s (build first)" % effc)
    target = args.target
    torch.set_num_threads(1)
    cases = []
    failed_compiles = []
    t0 = time.time()

    skipped = set(filter(None, args.skip_variants.split(",")))

    def compile_variant(case, tag, onnx_path, flags, tgt=None):
        if tag in skipped:
            return
        tgt = tgt or target
        effx = "%s.%s.effx" % (case["name"], tag)
        report = "%s.%s.report.json" % (case["name"], tag)
        cmd = [effc, onnx_path, "-o", os.path.join(out, effx),
               "--target", tgt, "--report-json", os.path.join(out, report)]
        if tgt == "cpu":
            # Runs on whatever CPU the GPU machine has.
            cmd += ["--cpu", "x86-64"]
        if tgt == target:
            # --effc flags are for the suite's target (not the CPU
            # variants the cross-device checks compile).
            cmd += args.effc
        case["variants"][tag] = dict(effx=effx, report=report, target=tgt,
                                     flags=flags)
        r = subprocess.run(cmd + flags, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        if r.returncode != 0:
            # Recorded, not fatal: the checks that need it FAIL there with
            # effc's words, the others still run.
            lines = (r.stderr.strip() or r.stdout.strip() or
                     "no output").splitlines()
            case["variants"][tag]["error"] = "effc --target %s failed: %s" % (
                tgt, lines[-1][:300])
            failed_compiles.append("%s %s" % (case["name"], tag))
            print("  FAILED   %-8s %-12s --target %s: %s" % (
                case["name"], tag, tgt, lines[-1][:300]), flush=True)
            return
        print("  compiled %-8s %-12s --target %s %s" % (
            case["name"], tag, tgt, " ".join(flags)), flush=True)

    def new_case(name, spec, model, B, data, steps, opt, onnx_writer=None,
                 outputs=("loss", "logits")):
        names = list(data)
        onnx_path = os.path.join(out, name + ".onnx")
        if onnx_writer is not None:
            onnx_writer(onnx_path)
        else:
            tv.export(model, tuple(torch.from_numpy(data[k][:B])
                                   for k in names),
                      names, onnx_path, output_names=outputs)
        save_npz(os.path.join(out, name + ".data.npz"), data)
        save_npz(os.path.join(out, name + ".init.npz"), state_arrays(model))
        case = dict(name=name, spec=spec, batch=B, steps=steps, inputs=names,
                    data=name + ".data.npz", init=name + ".init.npz",
                    opt=opt, variants={})
        cases.append(case)
        return case, onnx_path

    wanted = set(args.models.split(",")) if args.models else None

    def want(name):
        return wanted is None or name in wanted

    if want("mlp"):
        model, B, data = tv.make("mlp", 10, 0)
        opt = opt_ns(lr=0.01, weight_decay=0.001)
        case, onnx_path = new_case("mlp", {"kind": "mlp"}, model, B, data,
                                   10, opt)
        compile_variant(case, "fp32", onnx_path, effc_opt_flags(opt))

    if want("cnn"):
        model, B, data = tv.make("cnn", 12, 0)
        opt = opt_ns(lr=0.003, weight_decay=0.01)
        case, onnx_path = new_case("cnn", {"kind": "cnn"}, model, B, data,
                                   12, opt)
        flags = effc_opt_flags(opt)
        compile_variant(case, "fp32", onnx_path, flags)
        compile_variant(case, "selective", onnx_path,
                        flags + ["--remat", "selective"])
        compile_variant(case, "bf16", onnx_path,
                        flags + ["--precision", "bf16"])
        if target in ("cuda", "cuda-emulated"):
            # The convolutions as columns + GEMMs instead of cuDNN calls
            # (emulated too: the weight gradient is a GEMM batch summed
            # into one C, which the emulation once got wrong).
            compile_variant(case, "im2col", onnx_path,
                            flags + ["--convolution", "im2col"])

    if want("gpt"):
        model, B, data = tv.make("gpt", 12, 0)
        opt = opt_ns(lr=0.003, weight_decay=0.1, schedule="cosine",
                     warmup_steps=3, total_steps=12)
        spec = dict(GPT_SPEC, kind="gpt", dropout=0.0)
        case, onnx_path = new_case("gpt", spec, model, B, data, 12, opt)
        case["param_atol"] = 5e-5   # the key bias: see gpt-adamw-cosine.test
        flags = effc_opt_flags(opt)
        compile_variant(case, "fp32", onnx_path, flags)
        compile_variant(case, "bf16", onnx_path, flags + ["--precision", "bf16"])
        compile_variant(case, "fp16", onnx_path, flags + [
            "--precision", "fp16", "--loss-scale", "static",
            "--loss-scale-init", "1024"])
        # The optimizer's state (and bf16's master weights) in host memory,
        # updated on the CPU (offload:* checks; on --target cpu as well,
        # for the dry run).
        compile_variant(case, "offload-fp32", onnx_path,
                        flags + ["--offload", "optimizer"])
        compile_variant(case, "offload-bf16", onnx_path, flags + [
            "--precision", "bf16", "--offload", "optimizer"])
        if target != "cpu":
            # The CPU twin: resumes the GPU's checkpoints (xdev checks).
            compile_variant(case, "cpu", onnx_path, flags, tgt="cpu")
            # Attention unfused (batched GEMMs and softmax kernels); the
            # variants above run the runtime's attention kernels (head size
            # 16 runs them in f32).
            compile_variant(case, "fp32-unfused", onnx_path,
                            flags + ["--fuse-attention=false"])
            compile_variant(case, "bf16-unfused", onnx_path, flags + [
                "--precision", "bf16", "--fuse-attention=false"])
            compile_variant(case, "fp16-unfused", onnx_path, flags + [
                "--precision", "fp16", "--loss-scale", "static",
                "--loss-scale-init", "1024", "--fuse-attention=false"])
            # ZeRO stages 1 and 3 with their collectives kept at one rank:
            # NCCL's all-reduce, reduce-scatter and all-gather run in the
            # step on one GPU (effrun --nccl; nccl:* checks).
            for stage in (1, 3):
                compile_variant(case, "zero%d" % stage, onnx_path, flags + [
                    "--zero", str(stage), "--world-size", "1",
                    "--zero-one-rank-collectives"])


    if want("llama"):
        import zoo_llama
        import make_llama_onnx as gen
        zc = zoo_llama.tiny()
        steps = 4
        batches = [zc.batches(i) for i in range(steps)]
        data = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
        state = {k: v.detach().numpy() for k, v in
                 zc.model.state_dict().items()}
        opt = opt_ns(lr=0.001, weight_decay=0.01)
        case, onnx_path = new_case(
            "llama", {"kind": "llama", "seq": 16}, zc.model, zc.batch_size,
            data, steps, opt,
            onnx_writer=lambda p: gen.write_model(p, dict(gen.CONFIGS["tiny"]),
                                                  zc.batch_size, 16,
                                                  weights=state))
        compile_variant(case, "fp32", onnx_path,
                        effc_opt_flags(opt) + ["--opt-level", "1"])

    if want("lora"):
        model, B, data = tv.make("gpt", 6, 0)
        opt = opt_ns(lr=0.01, weight_decay=0.01)
        spec = dict(GPT_SPEC, kind="gpt", dropout=0.0)
        case, onnx_path = new_case("lora", spec, model, B, data, 6, opt)
        case["lora"] = dict(rank=4, alpha=8.0, targets=LORA_TARGETS)
        compile_variant(case, "fp32", onnx_path, effc_opt_flags(opt) + [
            "--lora", "rank=4,alpha=8.0,targets=" + LORA_TARGETS,
            "--opt-level", "1"])

    if want("remat"):
        # The GPT with dropout 0.1 (recomputed masks must match), as
        # remat-bit-identical.test.
        gspec = ex.make_gpt(6)
        opt = opt_ns(lr=0.003, weight_decay=0.0)
        spec = dict(GPT_SPEC, kind="gpt", dropout=0.1)
        case, onnx_path = new_case("rematgpt", spec, gspec["model"],
                                   gspec["batch"], gspec["data"], 6, opt)
        case["no_torch"] = True
        flags = ["--optimizer", "adamw", "--lr", "3e-3"]
        for policy in ("none", "selective", "full"):
            compile_variant(case, policy, onnx_path,
                            flags + ["--remat", policy])

    manifest = dict(target=target, created=time.strftime("%Y-%m-%d %H:%M:%S"),
                    torch=torch.__version__, cases=cases)
    with open(os.path.join(out, "suite.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("suite.py prepare: %d models, %d .effx (--target %s) in %s (%.0f s)"
          % (len(cases), sum(len(c["variants"]) for c in cases)
             - len(failed_compiles), target, out, time.time() - t0))
    if failed_compiles:
        print("suite.py prepare: %d variants did not compile (their checks "
              "will FAIL): %s" % (len(failed_compiles),
                                  ", ".join(failed_compiles)))


# ---------------------------------------------------------------------------
# run (there: PyTorch 2.x on the GPU; here: --device-kind cpu dry run)
# ---------------------------------------------------------------------------

class Results:
    def __init__(self):
        self.checks = []

    def add(self, name, status, detail="", **extra):
        row = dict(name=name, status=status, detail=detail)
        row.update(extra)
        self.checks.append(row)
        print("%-11s %-24s %s" % (status, name, detail), flush=True)
        return status == "PASS"

    def passed(self, name, detail="", **kw):
        return self.add(name, "PASS", detail, **kw)

    def failed(self, name, detail, **kw):
        return self.add(name, "FAIL", detail, **kw)

    def unsupported(self, name, detail, **kw):
        return self.add(name, "UNSUPPORTED", detail, **kw)


class EffrunError(Exception):
    pass


class FreeMemoryWatch:
    """The lowest device-wide free memory (cudaMemGetInfo, polled) while
    effrun runs: the whole process's footprint, CUDA context and code
    included. Informative: device_bytes (effrun's own, around its
    allocations) is what the memory checks compare."""

    def __init__(self, on):
        self.on = on
        self.low = self.before = None
        self.stop = threading.Event()

    def __enter__(self):
        if self.on:
            torch.cuda.synchronize()
            self.before = self.low = torch.cuda.mem_get_info()[0]
            self.thread = threading.Thread(target=self.poll, daemon=True)
            self.thread.start()
        return self

    def poll(self):
        while not self.stop.is_set():
            self.low = min(self.low, torch.cuda.mem_get_info()[0])
            time.sleep(0.01)

    def __exit__(self, *exc):
        if self.on:
            self.stop.set()
            self.thread.join()

    def taken(self):
        return None if not self.on else self.before - self.low


class Effrun:
    def __init__(self, path, threads):
        self.path = path
        self.threads = threads

    def __call__(self, effx, data, steps, log=None, save=None, resume=None,
                 extra=(), env=None):
        cmd = [self.path, effx, "--data", data, "--steps", str(steps),
               "--quiet"]
        if log:
            cmd += ["--log", log]
        if save:
            cmd += ["--save", save]
        if resume:
            cmd += ["--resume", resume]
        if self.threads:
            cmd += ["--threads", str(self.threads)]
        cmd += list(extra)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env)
        if r.returncode != 0:
            msg = (r.stderr.strip() or r.stdout.strip() or "no output")
            raise EffrunError("effrun exit %d: %s" % (
                r.returncode, msg.splitlines()[-1][:300]))
        return r


def read_log(path):
    return [json.loads(line) for line in open(path)]


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def unique_state(model):
    """{name: numpy} of parameters and buffers, tied tensors once (under the
    first name, as the ONNX initializers)."""
    out, seen = {}, set()
    for k, v in model.state_dict(keep_vars=True).items():
        if v.data_ptr() in seen and v.numel() > 0:
            continue
        seen.add(v.data_ptr())
        out[k] = v.detach().cpu().numpy().copy()
    return out


def autocast_ctx(device, precision):
    if precision == "fp32":
        import contextlib
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def make_scaler(device, init):
    kw = dict(init_scale=init, growth_interval=1 << 30)
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        try:
            return torch.amp.GradScaler(device.type, **kw)
        except TypeError:
            pass
    return torch.cuda.amp.GradScaler(**kw)


def torch_train(model, case, data, device, precision="fp32", params=None,
                steps=None):
    """Trains `model` (on `device`) on the case's batches; returns (losses,
    ms/step)."""
    o = types.SimpleNamespace(**case["opt"])
    steps = steps or case["steps"]
    B = case["batch"]
    model.to(device)
    model.train()
    params = params if params is not None else \
        [p for p in model.parameters() if p.requires_grad]
    if o.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=o.lr, momentum=o.momentum,
                              nesterov=o.nesterov, weight_decay=o.weight_decay)
    elif o.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=o.lr, betas=(o.beta1, o.beta2),
                                eps=o.eps, weight_decay=o.weight_decay)
    else:
        opt = torch.optim.Adam(params, lr=o.lr, betas=(o.beta1, o.beta2),
                               eps=o.eps, weight_decay=o.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, tv.lr_lambda(o))
    scaler = make_scaler(device, 1024.0) if precision == "fp16" else None
    losses = []
    t0 = time.time()
    for i in range(steps):
        batch = [torch.from_numpy(data[k][i * B:(i + 1) * B]).to(device)
                 for k in case["inputs"]]
        opt.zero_grad()
        with autocast_ctx(device, precision):
            out = model(*batch)
        loss = out[0] if isinstance(out, (tuple, list)) else out
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            if o.clip_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(params, o.clip_grad_norm)
            opt.step()
        sched.step()
        losses.append(float(loss))
    if device.type == "cuda":
        torch.cuda.synchronize()
    return losses, (time.time() - t0) * 1000.0 / max(1, steps)


def fresh_model(case, workdir):
    model = build_model(case["spec"])
    init = load_npz(os.path.join(workdir, case["init"]))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in init.items()},
                          strict=True)
    return model


def compare_losses(ours, ref, rtol, atol):
    """(ok, worst relative error, first bad step or None)."""
    worst, bad = 0.0, None
    if len(ours) != len(ref):
        return False, float("inf"), "%d steps logged, %d expected" % (
            len(ours), len(ref))
    for i, (g, r) in enumerate(zip(ours, ref)):
        if g is None:
            return False, float("inf"), "step %d: effrun's loss is not finite" % i
        err = abs(g - r)
        worst = max(worst, err / max(abs(r), 1e-30))
        if err > atol + rtol * abs(r) and bad is None:
            bad = "step %d: loss %.7g, torch %.7g" % (i, g, r)
    return bad is None, worst, bad


def compare_state(got, want, rtol, atol, skip=()):
    """(ok, max abs err, message) for fp32 state."""
    worst, msgs = 0.0, []
    for name, w in want.items():
        if name.endswith("num_batches_tracked") or name in skip:
            continue
        if name not in got:
            if name.endswith(".mask"):
                continue
            msgs.append("checkpoint misses %s" % name)
            continue
        g = got[name].astype(np.float64)
        w64 = w.astype(np.float64)
        if g.shape != w64.shape:
            msgs.append("%s: shape %s, torch %s" % (name, g.shape, w64.shape))
            continue
        err = np.abs(g - w64)
        if err.size:
            worst = max(worst, float(err.max()))
        if (err > atol + rtol * np.abs(w64)).any():
            msgs.append("%s: max abs err %.3g" % (name, float(err.max())))
    return not msgs, worst, "; ".join(msgs[:3])


def drop_key_bias(state, case):
    d = case["spec"].get("d_model")
    if not d:
        return state
    out = dict(state)
    for k, v in state.items():
        if k.endswith("attn.c_attn.bias") and v.shape == (3 * d,):
            out[k] = np.concatenate([v[:d], v[2 * d:]])
    return out


def moved_errors(got, want, init, skip=()):
    """Low precision: per tensor, max |got - want| over the tensor's largest
    change in training (lowp_vs_torch.py's measure). {name: error}."""
    errors = {}
    for name, w in want.items():
        if name.endswith("num_batches_tracked") or name.endswith(".mask") \
                or name in skip or name not in got:
            continue
        moved = float(np.abs(w.astype(np.float64) - init[name]).max())
        err = float(np.abs(got[name].astype(np.float64) - w).max())
        errors[name] = err / max(moved, 1e-30)
    return errors


def compare_moved(got, want, init, limit, skip=(), floor=None, ours=None):
    """(ok, worst, name) of moved_errors(): each tensor within `limit` of
    PyTorch's low-precision run, or -- where AdamW turns rounding noise in
    near-zero gradients into steps of about lr either way, on both sides
    alike -- within 1.5x `floor[name]` (how far PyTorch's own low-precision
    run is from its fp32 run) of it, or no farther from PyTorch's fp32 run
    than 1.5x that (`ours[name]`: effopt's distance to the fp32 run; where
    effopt rounds less than PyTorch, e.g. attention kept in f32, it is
    closer to fp32 and about floor*sqrt(2) from the low-precision run).
    A tensor's floor is at least the upper quartile of the floors over all
    tensors: AdamW turns rounding noise into steps of about lr in every
    weight matrix alike, and one tensor's own distance is a single noisy
    sample of it (the suite's GPT in fp16 on an H100: 0.06 for one
    c_proj.weight, 0.08-0.11 for the other weights; the median, pulled down
    by biases and norms, was under 0.07)."""
    errors = moved_errors(got, want, init, skip)
    worst = (0.0, "")
    ok = True
    typical = float(np.percentile(list(floor.values()), 75)) if floor else 0.0
    for name, err in errors.items():
        noise = max(floor.get(name, 0.0), typical) if floor else 0.0
        good = err <= max(limit, 1.5 * noise)
        if not good and ours is not None and name in ours:
            good = ours[name] <= 1.5 * noise
        ok &= good
        worst = max(worst, (err, name))
    return ok, worst[0], worst[1]


class Runner:
    def __init__(self, args, manifest, effrun, device, res):
        self.args = args
        self.dir = os.path.abspath(args.dir)
        self.manifest = manifest
        self.effrun = effrun
        self.device = device
        self.res = res
        self.work = os.path.join(self.dir, "work-" + args.device_kind)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.table = []
        self.memory_checked = set()
        self.footprint = {}

    def selected(self, check):
        if not self.args.only:
            return True
        return any(check.startswith(p) for p in self.args.only.split(","))

    def p(self, name):
        return os.path.join(self.dir, name)

    def w(self, name):
        return os.path.join(self.work, name)

    def train_effrun(self, case, tag, steps=None, stem=None, resume=None,
                     env=None, extra=()):
        """effrun STEPS steps of a variant; {losses, state, log} or raises."""
        v = case["variants"][tag]
        if "error" in v:
            raise EffrunError(v["error"])
        stem = stem or "%s.%s" % (case["name"], tag)
        log, ckpt = self.w(stem + ".jsonl"), self.w(stem + ".safetensors")
        with FreeMemoryWatch(self.device.type == "cuda"
                             and v["target"] == "cuda") as watch:
            self.effrun(self.p(v["effx"]), self.p(case["data"]),
                        steps if steps is not None else case["steps"],
                        log=log, save=ckpt, resume=resume, env=env,
                        extra=extra)
        self.footprint[(case["name"], tag)] = watch.taken()
        rows = read_log(log) if os.path.exists(log) else []
        out = dict(log=rows, losses=[r["loss"] for r in rows], ckpt=ckpt,
                   state=tv.read_safetensors(ckpt))
        if resume is None and steps != 0 and \
                (case["name"], tag) not in self.memory_checked:
            self.memory_checked.add((case["name"], tag))
            self.memory_check(case, tag, rows)
        return out

    def memory_check(self, case, tag, rows):
        name = "memory:%s-%s" % (case["name"], tag)
        report = json.load(open(self.p(case["variants"][tag]["report"])))
        planned = report["total_bytes"]
        row = dict(check=name, planned=planned)
        self.table.append(row)
        if not rows:
            return self.res.failed(name, "effrun logged no step")
        alloc = rows[0].get("allocated_bytes")
        row["allocated"] = alloc
        # The plan counts the cuBLASLt workspace (a region of the report);
        # effrun's allocated_bytes may count the three regions only
        # (state + arena + io): then device_bytes is what shows the
        # workspace was allocated too.
        workspace = report.get("regions", {}).get("workspace", 0)
        note = ""
        if alloc != planned and workspace and alloc == planned - workspace:
            note = " (allocated_bytes leaves out the %d-byte workspace)" \
                % workspace
        elif alloc != planned:
            return self.res.failed(name, "planned %d bytes, effrun allocated %s"
                                   % (planned, alloc), planned=planned,
                                   allocated=alloc)
        if case["variants"][tag]["target"] != "cuda":
            if note:
                return self.res.failed(
                    name, "planned %d bytes, effrun allocated %d%s (the "
                    "CPU runtime allocates a cuda-emulated step's workspace "
                    "too)" % (planned, alloc, note), planned=planned,
                    allocated=alloc)
            return self.res.passed(name, "planned == allocated == %d bytes "
                                   "(host; no device bytes on --target %s)"
                                   % (planned, case["variants"][tag]["target"]),
                                   planned=planned, allocated=alloc)
        dev = rows[0].get("device_bytes")
        row["device"] = dev
        foot = self.footprint.get((case["name"], tag))
        row["process"] = foot
        seen = ("; the whole effrun process took %d bytes of the GPU "
                "(context and code included)" % foot) if foot else ""
        if dev is None:
            return self.res.failed(
                name, "effrun's log has no device_bytes (the drop of "
                "cuMemGetInfo's free bytes across the model's allocation); "
                "planned %d, allocated %d%s%s" % (planned, alloc, note, seen),
                planned=planned, allocated=alloc, process=foot)
        # cuMemAlloc hands out whole 2 MiB pages: each of the (at most 4)
        # regions may show up to that much more in cuMemGetInfo.
        ok = planned <= dev < planned + 4 * GRANULE
        return self.res.add(name, "PASS" if ok else "FAIL",
                            "planned %d, allocated %d%s, device %d bytes "
                            "(+%d: allocation granularity)%s"
                            % (planned, alloc, note, dev, dev - planned, seen),
                            planned=planned, allocated=alloc, device=dev,
                            process=foot)

    # -- checks ------------------------------------------------------------

    def check_train(self, case, tag, precision):
        name = "train:%s-%s" % (case["name"], tag)
        if not self.selected(name) or tag not in case["variants"]:
            return
        if precision == "fp16" and self.device.type == "cpu":
            return self.res.unsupported(name, "torch's CPU autocast has no "
                                        "fp16 (runs on the GPU)")
        data = load_npz(self.p(case["data"]))
        try:
            t0 = time.time()
            ours = self.train_effrun(case, tag)
            eff_ms = (time.time() - t0) * 1000.0 / case["steps"]
        except EffrunError as e:
            return self.res.failed(name, str(e))
        model = fresh_model(case, self.dir)
        init = unique_state(model)
        ref, torch_ms = torch_train(model, case, data, self.device, precision)
        want = unique_state(model)
        row = dict(check=name, effrun_ms_step=round(eff_ms, 2),
                   torch_ms_step=round(torch_ms, 2))
        self.table.append(row)
        if precision == "fp32":
            rtol, atol = 1e-3, 1e-5
            ok_l, worst_l, bad = compare_losses(ours["losses"], ref, rtol, atol)
            ok_s, worst_s, msg = compare_state(
                ours["state"], want, rtol, case.get("param_atol", atol))
        else:
            loss_rtol, moved = (2e-2, 0.3) if precision == "bf16" else \
                (1e-2, 0.1)
            ok_l, worst_l, bad = compare_losses(ours["losses"], ref,
                                                loss_rtol, 0.0)
            # The key bias (the middle third of c_attn.bias) has an exactly
            # zero true gradient: Adam turns each side's rounding noise into
            # steps of about lr in unrelated directions (see
            # gpt-adamw-cosine.test); it is left out of the measure here.
            # The noise floor: PyTorch's autocast run against its fp32 run
            # from the same state and batches.
            model32 = fresh_model(case, self.dir)
            torch_train(model32, case, data, self.device, "fp32")
            full = unique_state(model32)
            got, want, init, full = (drop_key_bias(x, case) for x in
                                     (ours["state"], want, init, full))
            floor = moved_errors(want, full, init)
            to_full = moved_errors(got, full, init)
            ok_s, worst_s, msg = compare_moved(got, want, init, moved,
                                               floor=floor, ours=to_full)
            msg = ("worst tensor %s (torch's own %s vs fp32: %.2e; effopt "
                   "vs fp32: %.2e)" % (msg, precision, floor.get(msg, 0.0),
                                       to_full.get(msg, 0.0)))
            # The five tensors farthest from PyTorch's run, each with both
            # distances to fp32: whether effopt or PyTorch rounds more.
            errors = moved_errors(got, want, init)
            row["farthest"] = [
                dict(tensor=t, vs_torch=round(e, 4),
                     torch_vs_fp32=round(floor.get(t, 0.0), 4),
                     effopt_vs_fp32=round(to_full.get(t, 0.0), 4))
                for e, t in sorted(((e, t) for t, e in errors.items()),
                                   reverse=True)[:5]]
            quartiles = lambda d: tuple(float(np.percentile(list(d.values()), q))
                                        for q in (50, 75, 100))
            print("   %s: torch %s vs fp32 over tensors: median %.4f, upper "
                  "quartile %.4f, max %.4f; effopt vs fp32: %.4f, %.4f, %.4f"
                  % ((name, precision) + quartiles(floor) + quartiles(to_full)),
                  flush=True)
            for f in row["farthest"]:
                print("   %s %s: vs torch %.4f, torch vs fp32 %.4f, effopt "
                      "vs fp32 %.4f" % (name, f["tensor"], f["vs_torch"],
                                        f["torch_vs_fp32"],
                                        f["effopt_vs_fp32"]), flush=True)
        row.update(loss_rel_err=worst_l, state_err=worst_s)
        detail = "%d steps, losses rel.err %.2e, state err %.2e" % (
            case["steps"], worst_l, worst_s)
        if ok_l and ok_s:
            return self.res.passed(name, detail, loss_rel_err=worst_l,
                                   state_err=worst_s)
        return self.res.failed(name, "; ".join(x for x in (
            bad, msg if not ok_s else "", detail) if x))

    def check_lora(self, case):
        name = "train:lora-gpt-fp32"
        if not self.selected(name):
            return
        import lora_vs_torch as lv
        data = load_npz(self.p(case["data"]))
        lo = case["lora"]
        try:
            start = self.train_effrun(case, "fp32", steps=0, stem="lora.init")
            ours = self.train_effrun(case, "fp32")
        except EffrunError as e:
            return self.res.failed(name, str(e))
        model = fresh_model(case, self.dir)
        frozen = unique_state(model)
        linears = lv.targeted_linears(model, lo["targets"])
        wrapped = lv.wrap(model, list(linears), lo["rank"], lo["alpha"])
        for prm in model.parameters():
            prm.requires_grad_(False)
        adapters = []
        for n, layer in wrapped.items():
            with torch.no_grad():
                for ab, lin in (("A", layer.lora_A), ("B", layer.lora_B)):
                    key = "%s.lora_%s.weight" % (n, ab)
                    if key not in start["state"]:
                        return self.res.failed(name, "effrun's initial "
                                               "checkpoint has no " + key)
                    lin.weight.copy_(torch.from_numpy(
                        start["state"][key].copy()))
            for prm in (layer.lora_A.weight, layer.lora_B.weight):
                prm.requires_grad_(True)
                adapters.append(prm)
        ref, _ = torch_train(model, case, data, self.device, "fp32",
                             params=adapters)
        ok_l, worst_l, bad = compare_losses(ours["losses"], ref, 1e-3, 1e-5)
        want = {}
        for n, layer in wrapped.items():
            want[n + ".lora_A.weight"] = layer.lora_A.weight.detach().cpu().numpy()
            want[n + ".lora_B.weight"] = layer.lora_B.weight.detach().cpu().numpy()
        ok_s, worst_s, msg = compare_state(ours["state"], want, 1e-3, 1e-5)
        changed = [k for k, v in frozen.items() if k in ours["state"]
                   and not np.array_equal(ours["state"][k], v)]
        detail = "%d adapters, losses rel.err %.2e, adapters err %.2e" % (
            len(want), worst_l, worst_s)
        if ok_l and ok_s and not changed:
            return self.res.passed(name, detail)
        return self.res.failed(name, "; ".join(x for x in (
            bad, msg, changed and "frozen tensors changed: %s" % changed[:3],
            detail) if x))

    def check_remat(self, case):
        if not any(self.selected("remat:gpt-" + p)
                   for p in ("selective", "full")):
            return
        base = None
        for policy in ("none", "selective", "full"):
            name = "remat:gpt-%s" % policy
            try:
                r = self.train_effrun(case, policy)
            except EffrunError as e:
                if policy == "none":
                    for p in ("selective", "full"):
                        self.res.failed("remat:gpt-%s" % p,
                                        "--remat none failed: %s" % e)
                    return
                self.res.failed(name, str(e))
                continue
            if policy == "none":
                base = r
                continue
            if not self.selected(name):
                continue
            same_l = [f32_bits(x) for x in r["losses"]] == \
                [f32_bits(x) for x in base["losses"]]
            diff = [k for k in base["state"] if k not in r["state"] or
                    not np.array_equal(base["state"][k], r["state"][k])]
            planned = json.load(open(self.p(
                case["variants"][policy]["report"])))["total_bytes"]
            none_planned = json.load(open(self.p(
                case["variants"]["none"]["report"])))["total_bytes"]
            detail = ("%d steps, dropout 0.1; planned %d bytes (none %d)"
                      % (case["steps"], planned, none_planned))
            if same_l and not diff:
                self.res.passed(name, "bit-identical to none: " + detail)
            else:
                self.res.failed(name, "%s%s; %s" % (
                    "" if same_l else "losses differ from none; ",
                    "%d tensors differ, e.g. %s" % (len(diff), diff[0])
                    if diff else "", detail))

    def check_cnn_remat(self, case):
        name = "remat:cnn-selective"
        if not self.selected(name) or "selective" not in case["variants"]:
            return
        try:
            base = self.train_effrun(case, "fp32", stem="cnn.remat-none")
            r = self.train_effrun(case, "selective")
        except EffrunError as e:
            return self.res.failed(name, str(e))
        same = [f32_bits(x) for x in r["losses"]] == \
            [f32_bits(x) for x in base["losses"]]
        diff = [k for k in base["state"]
                if not np.array_equal(base["state"][k], r["state"].get(k))]
        if same and not diff:
            return self.res.passed(name, "bit-identical to none, %d steps"
                                   % case["steps"])
        return self.res.failed(name, "losses %s, %d tensors differ" % (
            "equal" if same else "differ", len(diff)))

    def check_resume(self, case):
        name = "resume:gpt-fp32"
        if not self.selected(name):
            return
        try:
            full = self.train_effrun(case, "fp32", steps=6, stem="gpt.full6")
            half = self.train_effrun(case, "fp32", steps=3, stem="gpt.half3")
            rest = self.train_effrun(case, "fp32", steps=3, stem="gpt.rest3",
                                     resume=half["ckpt"])
        except EffrunError as e:
            return self.res.failed(name, str(e))
        same_l = [f32_bits(x) for x in full["losses"][3:]] == \
            [f32_bits(x) for x in rest["losses"]] and \
            [r["step"] for r in rest["log"]] == [3, 4, 5]
        diff = [k for k in full["state"]
                if not np.array_equal(full["state"][k], rest["state"].get(k))]
        if same_l and not diff:
            return self.res.passed(name, "6 steps == 3 + --resume 3, "
                                   "bit-identical (%d tensors)"
                                   % len(full["state"]))
        return self.res.failed(name, "losses %s; %d tensors differ%s" % (
            "equal" if same_l else "differ", len(diff),
            (", e.g. " + diff[0]) if diff else ""))

    def check_graphs(self, case):
        """CUDA graph replay (every step after the second) bit-identical
        to eager steps (EFFRT_CUDA_GRAPHS=0, docs/CudaRuntime.md)."""
        name = "graphs:gpt-fp32"
        if not self.selected(name):
            return
        if self.args.device_kind != "cuda":
            return self.res.unsupported(name, "needs --device-kind cuda")
        try:
            graphs = self.train_effrun(case, "fp32", steps=6,
                                       stem="gpt.graphs6")
            eager = self.train_effrun(case, "fp32", steps=6,
                                      stem="gpt.eager6",
                                      env=dict(os.environ,
                                               EFFRT_CUDA_GRAPHS="0"))
        except EffrunError as e:
            return self.res.failed(name, str(e))
        same_l = [f32_bits(x) for x in graphs["losses"]] == \
            [f32_bits(x) for x in eager["losses"]]
        diff = [k for k in graphs["state"] if not np.array_equal(
            graphs["state"][k], eager["state"].get(k))]
        if same_l and not diff:
            return self.res.passed(name, "6 steps replayed as a CUDA graph "
                                   "== 6 eager steps, bit-identical")
        return self.res.failed(name, "losses %s; %d tensors differ" % (
            "equal" if same_l else "differ", len(diff)))

    def check_nccl(self, case):
        """ZeRO 1 and 3 on NCCL at world size 1 (docs/Distributed.md, "On
        GPUs: NCCL"): the NCCL run against the same .effx with the
        single-rank copies (bit for bit: a sum or gather over one rank is
        the data), against the --zero 0 run without collectives and against
        PyTorch (fp32 tolerances)."""
        for stage in (1, 3):
            name = "nccl:gpt-zero%d" % stage
            tag = "zero%d" % stage
            if not self.selected(name):
                continue
            if self.args.device_kind != "cuda":
                self.res.unsupported(name, "needs --device-kind cuda")
                continue
            if tag not in case["variants"]:
                self.res.failed(name, "not prepared (scripts/gpu/prepare.sh "
                                "--target cuda compiles it)")
                continue
            data = load_npz(self.p(case["data"]))
            try:
                base = self.train_effrun(case, "fp32", stem="gpt.nccl-base")
                nccl = self.train_effrun(case, tag, stem="gpt.%s-nccl" % tag,
                                         extra=["--nccl"])
                copies = self.train_effrun(case, tag,
                                           stem="gpt.%s-copies" % tag)
            except EffrunError as e:
                self.res.failed(name, str(e))
                continue
            model = fresh_model(case, self.dir)
            ref, _ = torch_train(model, case, data, self.device, "fp32")
            want = unique_state(model)
            same = [f32_bits(x) for x in nccl["losses"]] == \
                [f32_bits(x) for x in copies["losses"]] and not [
                    k for k in copies["state"] if not np.array_equal(
                        copies["state"][k], nccl["state"].get(k))]
            ok_b, worst_b, bad_b = compare_losses(nccl["losses"],
                                                  base["losses"], 1e-4, 1e-6)
            ok_bs, worst_bs, msg_bs = compare_state(nccl["state"],
                                                    base["state"], 1e-4, 1e-6)
            ok_t, worst_t, bad_t = compare_losses(nccl["losses"], ref, 1e-3,
                                                  1e-5)
            ok_ts, worst_ts, msg_ts = compare_state(
                nccl["state"], want, 1e-3, case.get("param_atol", 1e-5))
            detail = ("%d steps; vs --zero 0: losses %.1e, state %.1e; vs "
                      "torch: losses %.1e, state %.1e; %s single-rank copies"
                      % (case["steps"], worst_b, worst_bs, worst_t, worst_ts,
                         "bit-identical to" if same else "DIFFERS from"))
            if same and ok_b and ok_bs and ok_t and ok_ts:
                self.res.passed(name, detail)
            else:
                self.res.failed(name, "; ".join(x for x in (
                    bad_b, msg_bs if not ok_bs else "", bad_t,
                    msg_ts if not ok_ts else "", detail) if x))

    def check_xdev(self, case):
        """GPU checkpoint -> CPU twin and back, against 6 GPU steps."""
        if "cpu" not in case["variants"]:
            for n in ("xdev:gpu-to-cpu", "xdev:cpu-to-gpu"):
                if self.selected(n):
                    self.res.unsupported(n, "no CPU twin: prepared with "
                                         "--target cpu (dry run)")
            return
        if not any(self.selected(n) for n in ("xdev:gpu-to-cpu",
                                               "xdev:cpu-to-gpu")):
            return
        try:
            full = self.train_effrun(case, "fp32", steps=6, stem="gpt.xfull6")
        except EffrunError as e:
            for n in ("xdev:gpu-to-cpu", "xdev:cpu-to-gpu"):
                self.res.failed(n, str(e))
            return
        for name, first, second in (("xdev:gpu-to-cpu", "fp32", "cpu"),
                                    ("xdev:cpu-to-gpu", "cpu", "fp32")):
            if not self.selected(name):
                continue
            try:
                a = self.train_effrun(case, first, steps=3,
                                      stem="x.%s.first" % name[5:])
                b = self.train_effrun(case, second, steps=3,
                                      stem="x.%s.second" % name[5:],
                                      resume=a["ckpt"])
            except EffrunError as e:
                self.res.failed(name, str(e))
                continue
            ok_l, worst_l, bad = compare_losses(
                a["losses"] + b["losses"], full["losses"], 1e-3, 1e-5)
            ok_s, worst_s, msg = compare_state(b["state"], full["state"],
                                               1e-3, 5e-5)
            detail = "3 + 3 steps vs 6 on the GPU: losses rel.err %.2e, " \
                     "state err %.2e" % (worst_l, worst_s)
            if ok_l and ok_s:
                self.res.passed(name, detail)
            else:
                self.res.failed(name, "; ".join(x for x in (bad, msg, detail)
                                                if x))

    def check_offload(self, case, precision):
        """--offload optimizer against the same GPU without offload: the
        update runs on the CPU (no FMA contraction, so not bit for bit)."""
        name = "offload:gpt-%s" % precision
        tag = "offload-" + precision
        if not self.selected(name) or tag not in case["variants"]:
            return
        try:
            off = self.train_effrun(case, tag)
            base = self.train_effrun(case, precision,
                                     stem="gpt.%s.for-offload" % precision)
        except EffrunError as e:
            return self.res.failed(name, str(e))
        if precision == "fp32":
            ok_l, worst_l, bad = compare_losses(off["losses"], base["losses"],
                                                1e-3, 1e-5)
            ok_s, worst_s, msg = compare_state(
                off["state"], base["state"], 1e-3, case.get("param_atol", 1e-5))
        else:
            ok_l, worst_l, bad = compare_losses(off["losses"], base["losses"],
                                                2e-2, 0.0)
            model = fresh_model(case, self.dir)
            init = unique_state(model)
            # The model's tensors (the checkpoints also hold the optimizer's
            # state and, offloaded, the weights' bf16 device copies).
            got, want = ({k: v for k, v in x.items() if k in init}
                         for x in (off["state"], base["state"]))
            got, want, init = (drop_key_bias(x, case) for x in
                               (got, want, init))
            ok_s, worst_s, msg = compare_moved(got, want, init, 0.3)
        host = off["log"][0].get("host_bytes") if off["log"] else None
        detail = ("%d steps, losses rel.err %.2e, state err %.2e vs no "
                  "offload%s" % (case["steps"], worst_l, worst_s,
                                 "; host region %d bytes" % host
                                 if host else ""))
        self.table.append(dict(check=name, loss_rel_err=worst_l,
                               state_err=worst_s))
        if ok_l and ok_s:
            return self.res.passed(name, detail, loss_rel_err=worst_l,
                                   state_err=worst_s)
        return self.res.failed(name, "; ".join(x for x in (
            bad, msg if not ok_s else "", detail) if x))

    def check_refuse(self, case):
        name = "refuse:no-gpu-visible"
        if not self.selected(name):
            return
        if self.args.device_kind != "cuda":
            return self.res.unsupported(name, "needs --device-kind cuda")
        if "error" in case["variants"]["fp32"]:
            return self.res.failed(name, case["variants"]["fp32"]["error"])
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        cmd = [self.effrun.path, self.p(case["variants"]["fp32"]["effx"]),
               "--data", self.p(case["data"]), "--steps", "1"]
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True,
                               env=env, timeout=120)
        except subprocess.TimeoutExpired:
            return self.res.failed(name, "effrun hung with no GPU visible")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        if r.returncode not in (0, None) and r.returncode > 0 and \
                len(lines) == 1 and lines[0].startswith("effrun: error:"):
            return self.res.passed(name, "exit %d: %s" % (r.returncode,
                                                          lines[0][:160]))
        return self.res.failed(name, "exit %d, stderr %r" % (
            r.returncode, r.stderr[-300:]))


def device_info(kind):
    """(torch.device or None, description, reason when unsupported)."""
    if kind == "cpu":
        return torch.device("cpu"), "cpu (dry run)", None
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return None, "no CUDA device", ("no CUDA GPU visible to PyTorch %s "
                                        "(torch.cuda.is_available() is false)"
                                        % torch.__version__)
    props = torch.cuda.get_device_properties(0)
    # TF32 off on the torch side, as effc's default (allow_tf32 false).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    # effopt's fp16/bf16 GEMMs accumulate in f32 (cuBLASLt compute 32F);
    # PyTorch lets cuBLAS reduce fp16 (and bf16) products in their own
    # precision by default. The reference keeps the precision effopt claims.
    for flag in ("allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        if hasattr(torch.backends.cuda.matmul, flag):
            setattr(torch.backends.cuda.matmul, flag, False)
    return torch.device("cuda:0"), "%s (%d MiB), torch %s" % (
        props.name, props.total_memory >> 20, torch.__version__), None


CHECKS = ["train:mlp-fp32", "train:cnn-fp32", "train:gpt-fp32",
          "train:gpt-bf16", "train:gpt-fp16", "train:gpt-fp32-unfused",
          "train:gpt-bf16-unfused", "train:gpt-fp16-unfused", "train:llama-fp32",
          "train:lora-gpt-fp32", "remat:gpt-selective", "remat:gpt-full",
          "remat:cnn-selective", "resume:gpt-fp32", "graphs:gpt-fp32",
          "nccl:gpt-zero1", "nccl:gpt-zero3",
          "train:gpt-offload-fp32", "train:gpt-offload-bf16",
          "offload:gpt-fp32", "offload:gpt-bf16",
          "xdev:gpu-to-cpu",
          "xdev:cpu-to-gpu", "refuse:no-gpu-visible"]


def find_nccl():
    """Where effrun finds NCCL (runtime/src/collectives/Nccl.cpp): the
    loader's path or the CUDA toolkit's lib/; else the copy PyTorch's wheels
    ship (nvidia/nccl/lib), passed on through $EFFRT_NCCL_LIBRARY."""
    if os.environ.get("EFFRT_NCCL_LIBRARY"):
        return os.environ["EFFRT_NCCL_LIBRARY"]
    # What effrun's own search finds (not this process's: PyTorch may have
    # loaded its copy already, which effrun would not see).
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for d in dirs + ["/usr/local/cuda/lib", "/usr/local/cuda/lib64"]:
        path = os.path.join(d, "libnccl.so.2")
        if os.path.exists(path):
            return path
    import ctypes.util
    if ctypes.util.find_library("nccl"):
        return "libnccl.so.2 (the loader's cache)"
    for root in sys.path:
        path = os.path.join(root, "nvidia", "nccl", "lib", "libnccl.so.2")
        if os.path.exists(path):
            os.environ["EFFRT_NCCL_LIBRARY"] = path
            return path
    return None


def run(args):
    t0 = time.time()
    manifest = json.load(open(os.path.join(args.dir, "suite.json")))
    res = Results()
    out = args.out or os.environ.get("OUT") or os.path.join(args.dir,
                                                             "out-suite")
    os.makedirs(out, exist_ok=True)
    want_target = "cuda" if args.device_kind == "cuda" else "cpu"
    torch.manual_seed(0)
    device, desc, why = device_info(args.device_kind)
    print("GPU suite: device %s; .effx compiled for --target %s on %s; "
          "NCCL %s" % (desc, manifest["target"], manifest["created"],
                       find_nccl() or "not found"), flush=True)
    status = 0
    if device is None:
        for c in CHECKS:
            res.unsupported(c, why)
        status = 3
    elif manifest["target"] != want_target and not (
            want_target == "cpu" and manifest["target"] == "cuda-emulated"):
        for c in CHECKS:
            res.failed(c, "the .effx files were compiled for --target %s, "
                       "--device-kind %s needs %s (scripts/gpu/prepare.sh "
                       "--target %s)" % (manifest["target"], args.device_kind,
                                         want_target, want_target))
        status = 1
    else:
        torch.set_num_threads(args.torch_threads)
        r = Runner(args, manifest, Effrun(args.effrun, args.threads), device,
                   res)
        cases = {c["name"]: c for c in manifest["cases"]}
        if "mlp" in cases:
            r.check_train(cases["mlp"], "fp32", "fp32")
        if "cnn" in cases:
            for tag, precision in (("fp32", "fp32"), ("bf16", "bf16"),
                                   ("im2col", "fp32")):
                r.check_train(cases["cnn"], tag, precision)
        if "gpt" in cases:
            for tag in ("fp32", "bf16", "fp16"):
                r.check_train(cases["gpt"], tag, tag)
            for tag, precision in (("fp32-unfused", "fp32"),
                                   ("bf16-unfused", "bf16"),
                                   ("fp16-unfused", "fp16"),
                                   ("offload-fp32", "fp32"),
                                   ("offload-bf16", "bf16")):
                r.check_train(cases["gpt"], tag, precision)
        if "llama" in cases:
            r.check_train(cases["llama"], "fp32", "fp32")
        if "lora" in cases:
            r.check_lora(cases["lora"])
        if "rematgpt" in cases:
            r.check_remat(cases["rematgpt"])
        if "cnn" in cases:
            r.check_cnn_remat(cases["cnn"])
        if "gpt" in cases:
            r.check_resume(cases["gpt"])
            r.check_graphs(cases["gpt"])
            r.check_nccl(cases["gpt"])
            r.check_xdev(cases["gpt"])
            for precision in ("fp32", "bf16"):
                r.check_offload(cases["gpt"], precision)
            r.check_refuse(cases["gpt"])
        status = 1 if any(c["status"] == "FAIL" for c in res.checks) else 0
        print()
        print("%-26s %12s %12s %12s %12s %10s %10s %9s %9s" % (
            "check", "planned", "allocated", "device", "process",
            "effrun_ms", "torch_ms", "loss_err", "state_err"))

        def fmt(v, f="%d"):
            return "-" if v is None else f % v
        for row in r.table:
            print("%-26s %12s %12s %12s %12s %10s %10s %9s %9s" % (
                row["check"], fmt(row.get("planned")),
                fmt(row.get("allocated")), fmt(row.get("device")),
                fmt(row.get("process")),
                fmt(row.get("effrun_ms_step"), "%.2f"),
                fmt(row.get("torch_ms_step"), "%.2f"),
                fmt(row.get("loss_rel_err"), "%.1e"),
                fmt(row.get("state_err"), "%.1e")))
        res.table = r.table
    counts = {s: sum(c["status"] == s for c in res.checks)
              for s in ("PASS", "FAIL", "UNSUPPORTED")}
    summary = dict(device_kind=args.device_kind, device=desc,
                   target=manifest["target"], torch=torch.__version__,
                   seconds=round(time.time() - t0, 1), counts=counts,
                   checks=res.checks, table=getattr(res, "table", []))
    with open(os.path.join(out, "gpu_suite.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    print("\nGPU suite: %d passed, %d failed, %d unsupported (%.0f s); "
          "summary in %s" % (counts["PASS"], counts["FAIL"],
                             counts["UNSUPPORTED"], time.time() - t0,
                             os.path.join(out, "gpu_suite.json")))
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--bin", required=True, help="directory with effc")
    p.add_argument("--target", default="cuda",
                   choices=["cuda", "cpu", "cuda-emulated"],
                   help="cuda-emulated: the cuda step's kernels emulated on "
                        "the CPU, run with --device-kind cpu")
    p.add_argument("--models", default="",
                   help="comma list of mlp,cnn,gpt,llama,lora,remat "
                        "(default: all)")
    p.add_argument("--effc", action="append", default=[],
                   help="an extra effc flag for every variant of --target "
                        "(e.g. --effc=--emulated-order=descending)")
    p.add_argument("--skip-variants", default="",
                   help="comma list of variant tags not to compile (e.g. "
                        "fp16,zero1 where the run's --only does not need "
                        "them)")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True, help="what prepare wrote")
    r.add_argument("--effrun", required=True)
    r.add_argument("--device-kind", default="cuda", choices=["cuda", "cpu"])
    r.add_argument("--out", default="", help="for gpu_suite.json "
                   "(default: $OUT, else DIR/out-suite)")
    r.add_argument("--only", default="", help="comma list of check-name "
                   "prefixes (e.g. train:gpt,remat:)")
    r.add_argument("--threads", type=int, default=0,
                   help="effrun --threads (0: effrun's default)")
    r.add_argument("--torch-threads", type=int, default=4)
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args)
    elif args.cmd == "run":
        sys.exit(run(args))
    else:
        ap.error("prepare or run")


if __name__ == "__main__":
    main()

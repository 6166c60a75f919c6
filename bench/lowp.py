#!/usr/bin/env python3
"""What bf16/fp16 cost on effopt's CPU backend: one GEMM and one large
elementwise op in f32, bf16 and fp16, compiled with `effc --mode forward`
and timed through libeffrt's C interface (effrt_session_forward), next to
PyTorch 1.13 eager on the same machine and thread count.

    /usr/bin/python3 bench/lowp.py [--bin build/bin] [--threads 1]
        [--reps 20] [--gemm 1024] [--elements 16777216]

Each case is a graph of the op alone on inputs of the type (y = a @ b;
y = tanh(a) + b, compute-bound; y = a * b + a, memory-bound), as it runs inside a step whose activations have that type.
Prints the median of --reps runs (after 2 warm-up runs) in ms and GFLOP/s
or GB/s (bytes of the type read and written), and the machine's load
(`uptime`) before and after. PyTorch's elementwise time includes
allocating its result (effopt's lives in the preallocated arena).
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "E2E", "lib"))

TYPES = {"f32": TensorProto.FLOAT, "bf16": TensorProto.BFLOAT16,
         "f16": TensorProto.FLOAT16}


def graph(kind, op, n, k, m):
    """The op on inputs of type `kind` (no casts: what is timed is the op
    itself, as it runs inside a step whose activations are `kind`)."""
    t = TYPES[kind]
    if op.startswith("gemm"):
        nodes = [helper.make_node("MatMul", ["a", "b"], ["y"])]
        inputs = [helper.make_tensor_value_info("a", t, [n, k]),
                  helper.make_tensor_value_info("b", t, [k, m])]
        out = [n, m]
    elif op == "tanh":
        # Compute-bound: a libm call per element.
        nodes = [helper.make_node("Tanh", ["a"], ["t"]),
                 helper.make_node("Add", ["t", "b"], ["y"])]
        inputs = [helper.make_tensor_value_info("a", t, [n]),
                  helper.make_tensor_value_info("b", t, [n])]
        out = [n]
    else:
        # y = a * b + a: two reads and one write of `kind` per element.
        nodes = [helper.make_node("Mul", ["a", "b"], ["p"]),
                 helper.make_node("Add", ["p", "a"], ["y"])]
        inputs = [helper.make_tensor_value_info("a", t, [n]),
                  helper.make_tensor_value_info("b", t, [n])]
        out = [n]
    g = helper.make_graph(nodes, "%s_%s" % (op, kind), inputs,
                          [helper.make_tensor_value_info("y", t, out)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def as_kind(a, kind):
    """f32 data as the bytes of `kind` (bf16: the upper halves, rounded)."""
    if kind == "f32":
        return a
    if kind == "f16":
        return a.astype(np.float16)
    import torch
    return torch.from_numpy(a).to(torch.bfloat16).view(torch.int16).numpy()


def time_effopt(lib, effxs, inputs, reps):
    """{kind: (median, fastest)} seconds; the kinds run in turn within each
    repetition, so load from other processes falls on all of them alike."""
    sessions = {}
    try:
        for kind, effx in effxs.items():
            s = lib.effrt_session_open(effx.encode())
            if not s:
                raise SystemExit(lib.effrt_last_error().decode())
            sessions[kind] = s
            for name, v in inputs[kind].items():
                lib.effrt_session_set_input(s, name.encode(), v.ctypes.data,
                                            v.nbytes)
        times = {kind: [] for kind in effxs}
        for i in range(reps + 2):
            for kind, s in sessions.items():
                t0 = time.perf_counter()
                if lib.effrt_session_forward(s) != 0:
                    raise SystemExit(lib.effrt_last_error().decode())
                times[kind].append(time.perf_counter() - t0)
        return {k: (statistics.median(t[2:]), min(t[2:]))
                for k, t in times.items()}
    finally:
        for s in sessions.values():
            lib.effrt_session_close(s)


def time_torch(kind, op, a, b, reps):
    import torch
    dt = {"f32": torch.float32, "bf16": torch.bfloat16,
          "f16": torch.float16}[kind]
    ta, tb = torch.from_numpy(a).to(dt), torch.from_numpy(b).to(dt)
    if op.startswith("gemm"):
        fn = lambda: ta @ tb
    elif op == "tanh":
        fn = lambda: torch.tanh(ta) + tb
    else:
        fn = lambda: ta * tb + ta
    try:
        fn()
    except RuntimeError as e:
        return None, str(e).split("\n")[0]
    times = []
    for i in range(reps + 2):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[2:]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--gemm", type=int, default=1024)
    ap.add_argument("--elements", type=int, default=1 << 24)
    args = ap.parse_args()
    import torch
    torch.set_num_threads(args.threads)
    print("uptime:", subprocess.run(["uptime"], capture_output=True,
                                    text=True).stdout.strip())
    # RTLD_GLOBAL: the compiled step resolves effrt_sgemm from libeffrt.
    lib = ctypes.CDLL(os.path.join(args.bin, "..", "lib", "libeffrt.so"),
                      mode=ctypes.RTLD_GLOBAL)
    lib.effrt_session_open.restype = ctypes.c_void_p
    lib.effrt_session_open.argtypes = [ctypes.c_char_p]
    lib.effrt_session_close.argtypes = [ctypes.c_void_p]
    lib.effrt_session_set_input.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.effrt_session_forward.argtypes = [ctypes.c_void_p]
    lib.effrt_last_error.restype = ctypes.c_char_p
    lib.effrt_set_num_threads(args.threads)
    work = tempfile.mkdtemp(prefix="effopt-lowp-")
    rng = np.random.RandomState(0)
    n = args.gemm
    cases = {
        "gemm": (n, n, n, rng.randn(n, n).astype(np.float32),
                 rng.randn(n, n).astype(np.float32), 2.0 * n ** 3, "GFLOP/s"),
        # A batch-32 linear layer: the widening (O(n^2)) weighs more
        # against a product with few rows.
        "gemm-32": (32, n, n, rng.randn(32, n).astype(np.float32),
                    rng.randn(n, n).astype(np.float32), 2.0 * 32 * n * n,
                    "GFLOP/s"),
        "tanh": (args.elements // 4, 0, 0,
                 rng.randn(args.elements // 4).astype(np.float32),
                 rng.randn(args.elements // 4).astype(np.float32),
                 None, "GB/s"),
        "mul-add": (args.elements, 0, 0,
                    rng.randn(args.elements).astype(np.float32),
                    rng.randn(args.elements).astype(np.float32),
                    None, "GB/s"),
    }
    print("threads %d; medians of %d runs" % (args.threads, args.reps))
    print("%-8s %-5s %10s %10s %12s %12s %12s" % (
        "op", "type", "effopt ms", "(fastest)", "effopt rate", "torch ms",
        "torch rate"))
    kinds = ("f32", "bf16", "f16")
    for op, (d0, d1, d2, a, b, flops, unit) in cases.items():
        effxs, inputs = {}, {}
        for kind in kinds:
            path = os.path.join(work, "%s-%s.onnx" % (op, kind))
            onnx.save_model(graph(kind, op, d0, d1, d2), path)
            effxs[kind] = path[:-5] + ".effx"
            r = subprocess.run([os.path.join(args.bin, "effc"), path, "-o",
                                effxs[kind], "--mode", "forward"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(r.stderr)
            inputs[kind] = {"a": as_kind(a, kind), "b": as_kind(b, kind)}
        timed = time_effopt(lib, effxs, inputs, args.reps)
        for kind in kinds:
            t, best = timed[kind]
            tt, err = time_torch(kind, op, a, b, args.reps)
            size = {"f32": 4, "bf16": 2, "f16": 2}[kind]
            # mul-add: two reads and one write of `kind` per element.
            work_amount = flops if flops else 3 * size * d0
            rate = lambda s: "%.1f" % (work_amount / s / 1e9)
            print("%-8s %-5s %10.2f %10.2f %12s %12s %12s" % (
                op, kind, t * 1e3, best * 1e3, rate(t),
                "%.2f" % (tt * 1e3) if tt else "n/a",
                rate(tt) if tt else ("n/a: " + err[:40] if err else "n/a")))
    print("uptime:", subprocess.run(["uptime"], capture_output=True,
                                    text=True).stdout.strip())


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""effrun on a GPU: the runtime's CUDA device, end to end.

  cuda_device_test.py BIN_DIR WORK_DIR [--cpu]

BIN_DIR holds effrun and effrt-make-test-model. --cpu checks only the CPU
twin of the test model against the same numpy reference (runs anywhere:
it keeps the reference honest where no GPU is). Otherwise exits 77
(skipped: CTest's
SKIP_RETURN_CODE, lit's cuda-device feature is then absent too) unless
libcuda.so.1 loads, cuInit succeeds and the driver sees a GPU; else runs
every check and exits 1 at the first that fails.

The dot test model (runtime/test/model/TestCudaModel.c: cuBLASLt products
through effrt_cuda_gemm, a PTX kernel loaded by mgpuModuleLoad) is trained
and compared with numpy: loss = sum(x w), w -= 0.125 x^T 1 for batch step i
= rows [4i, 4i+4). Then: CUDA graph replay against eager steps, --device and
CUDA_VISIBLE_DEVICES, GPU -> CPU -> GPU resume, and the one-line refusals
(no such device, no visible GPU, an uncovered architecture, a plan larger
than the GPU's free memory).
"""
import ctypes
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np

SKIP = 77


def gpu_count():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


bin_dir, work = sys.argv[1], sys.argv[2]
cpu_only = sys.argv[3:] == ["--cpu"]
if not cpu_only and gpu_count() == 0:
    print("cuda_device_test: no GPU visible: skipped")
    sys.exit(SKIP)
os.makedirs(work, exist_ok=True)
effrun = os.path.join(bin_dir, "effrun")
make = os.path.join(bin_dir, "effrt-make-test-model")
checks = 0


def path(name):
    return os.path.join(work, name)


def run(args, env=None, ok=True):
    full = dict(os.environ, **(env or {}))
    r = subprocess.run(args, env=full, capture_output=True, text=True)
    if ok and r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def passed(what):
    global checks
    checks += 1
    print(f"ok {checks}: {what}")


def refused(args, pattern, what, env=None):
    r = run(args, env=env, ok=False)
    lines = r.stderr.strip().splitlines()
    if r.returncode != 1 or len(lines) != 1 or not re.fullmatch(pattern, lines[0]):
        sys.exit(f"FAIL: {what}: exit {r.returncode}, stderr {r.stderr!r}; "
                 f"expected one line matching {pattern!r}")
    passed(what)
    return lines[0]


x = None


def expected(first, count):
    """Losses of steps first..first+count-1 and w after them, in float64."""
    w = np.array([0.5, -0.25, 0.75])
    losses = []
    for step in range(first + count):
        xb = x[4 * step:4 * step + 4]
        if step >= first:
            losses.append(float((xb @ w).sum()))
        w = w - 0.125 * xb.sum(axis=0)
    return losses, w


def read_log(name):
    return [json.loads(line) for line in open(path(name))]


def read_ckpt(name):
    blob = open(path(name), "rb").read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    body = blob[8 + size:]

    def tensor(key, dtype):
        begin, end = header[key]["data_offsets"]
        return np.frombuffer(body[begin:end], dtype=dtype)

    return (tensor("w", np.float32).astype(np.float64),
            int(tensor("optimizer.step", np.int64)[0]),
            header["__metadata__"]["step"])


def check_run(log, first, count, ckpt, what):
    want, w = expected(first, count)
    records = read_log(log)
    if [r["step"] for r in records] != list(range(first, first + count)):
        sys.exit(f"FAIL: {what}: steps {[r['step'] for r in records]}")
    for r, loss in zip(records, want):
        if abs(r["loss"] - loss) > 1e-5 + 1e-5 * abs(loss):
            sys.exit(f"FAIL: {what}: step {r['step']}: loss {r['loss']!r}, numpy {loss!r}")
    got, counter, meta_step = read_ckpt(ckpt)
    if not np.allclose(got, w, rtol=1e-5, atol=1e-5):
        sys.exit(f"FAIL: {what}: w {got}, numpy {w}")
    if counter != first + count or meta_step != str(first + count):
        sys.exit(f"FAIL: {what}: step counter {counter}, metadata step {meta_step}")
    passed(what)


def same_losses(a, b, what):
    la = [(r["step"], r["loss"]) for r in read_log(a)]
    lb = [(r["step"], r["loss"]) for r in read_log(b)]
    if la != lb:
        sys.exit(f"FAIL: {what}: {la} != {lb}")
    passed(what)


run([make, "dot-cuda", path("gpu.effx"), path("d.npz"), "400"])
run([make, "dot", path("cpu.effx")])
x = np.load(path("d.npz"))["x"].astype(np.float64)

if cpu_only:
    run([effrun, path("cpu.effx"), "--data", path("d.npz"), "--steps", "20",
         "--log", path("cpu.jsonl"), "--save", path("cpu.safetensors"),
         "--quiet"])
    check_run("cpu.jsonl", 0, 20, "cpu.safetensors", "20 CPU steps match numpy")
    print(f"cuda_device_test: cpu: {checks} checks passed")
    sys.exit(0)

# Training: the first step eager, the second captured, the rest replayed.
run([effrun, path("gpu.effx"), "--data", path("d.npz"), "--steps", "20",
     "--log", path("gpu.jsonl"), "--save", path("gpu.safetensors"), "--quiet"])
check_run("gpu.jsonl", 0, 20, "gpu.safetensors", "20 GPU steps match numpy")
if any(r["allocated_bytes"] != 384 for r in read_log("gpu.jsonl")):
    sys.exit("FAIL: allocated_bytes is not the plan's 384")
passed("allocated bytes are the plan's")
run([effrun, path("gpu.effx"), "--data", path("d.npz"), "--steps", "20",
     "--log", path("eager.jsonl"), "--quiet"], env={"EFFRT_CUDA_GRAPHS": "0"})
same_losses("gpu.jsonl", "eager.jsonl", "graph replay = eager steps, bit for bit")
run([effrun, path("gpu.effx"), "--data", path("d.npz"), "--steps", "20",
     "--device", "0", "--log", path("dev0.jsonl"), "--quiet"],
    env={"CUDA_VISIBLE_DEVICES": "0"})
same_losses("gpu.jsonl", "dev0.jsonl", "--device 0 under CUDA_VISIBLE_DEVICES=0")

# Checkpoints: GPU -> CPU -> GPU.
run([effrun, path("gpu.effx"), "--data", path("d.npz"), "--steps", "8",
     "--save", path("g8.safetensors"), "--quiet"])
run([effrun, path("cpu.effx"), "--data", path("d.npz"), "--steps", "6",
     "--resume", path("g8.safetensors"), "--save", path("c14.safetensors"),
     "--log", path("c14.jsonl"), "--quiet"])
check_run("c14.jsonl", 8, 6, "c14.safetensors", "a GPU checkpoint resumes on the CPU")
run([effrun, path("gpu.effx"), "--data", path("d.npz"), "--steps", "6",
     "--resume", path("c14.safetensors"), "--save", path("g20.safetensors"),
     "--log", path("g20.jsonl"), "--quiet"])
check_run("g20.jsonl", 14, 6, "g20.safetensors", "a CPU checkpoint resumes on the GPU")

# Refusals: one line, exit status 1.
steps1 = ["--data", path("d.npz"), "--steps", "1"]
refused([effrun, path("gpu.effx"), *steps1, "--device", "4095"],
        r"effrun: error: .*gpu\.effx: --device 4095: the driver sees \d+ GPUs? "
        r"\(devices? 0(\.\.\d+)?\).*", "--device past the GPUs")
refused([effrun, path("gpu.effx"), *steps1],
        r"effrun: error: .*gpu\.effx: target 'cuda' needs an NVIDIA GPU.*"
        r"no GPU is visible; CUDA_VISIBLE_DEVICES=\)",
        "no visible GPU", env={"CUDA_VISIBLE_DEVICES": ""})
run([make, "dot-cuda", path("arch.effx"), "--manifest",
     '{"cuda_archs": ["sm_70"], "cuda_ptx": null}'])
refused([effrun, path("arch.effx"), *steps1],
        r"effrun: error: .*arch\.effx: GPU 0 \(.*, sm_\d+\) cannot run the "
        r"model's device code, compiled for sm_70; compile it for sm_\d+",
        "an architecture the code does not cover")
run([make, "dot-cuda", path("big.effx"), "--manifest",
     '{"regions": {"state": 192, "arena": 1099511627776, "io": 128}}'])
line = refused([effrun, path("big.effx"), *steps1],
               r"effrun: error: .*big\.effx: the plan needs 1099515822400 bytes "
               r"of GPU memory \(state 192 \+ arena 1099511627776 \+ io 128 \+ "
               r"cuBLASLt workspace 4194304\) but GPU 0 \(.*\) has \d+ bytes "
               r"free of \d+",
               "a plan larger than the GPU's free memory")
free, total = map(int, re.search(r"has (\d+) bytes free of (\d+)", line).groups())
if not 0 < free <= total:
    sys.exit(f"FAIL: free {free} of {total}")
passed("the free and total memory are plausible")
print(f"cuda_device_test: {checks} checks passed")

#!/usr/bin/env python3
"""effrt's cuDNN convolutions against PyTorch, on a GPU.

Runs what effrt_cuda_conv2d_fwd / _bwd_data / _bwd_weights run
(runtime/src/cuda/Convolution.cpp) through libeffrt_conv_check.so (ctypes;
built with the runtime, no LLVM/MLIR needed) on PyTorch's tensors and
stream, and checks:
  - each kind (forward, input gradient, filter gradient) in f32, bf16 and
    f16 on ResNet-like shapes (7x7 stride 2, 3x3 stride 1 and 2, 1x1 stride 1
    and 2) and on grouped, depthwise, dilated and asymmetrically padded
    ones, against a float64 reference from the same rounded inputs; the
    tolerance is twice the error of PyTorch's own cuDNN convolution in the
    same dtype, with a floor (f32: TF32 off on both sides);
  - determinism: two runs of each call equal bit for bit (the engine filter
    keeps deterministic engines only);
  - a refusal: an output size the windows do not give is one error line;
and times forward + both gradients of three ResNet-18 bf16 layers at batch
32 against torch's cuDNN (NCHW, cudnn.benchmark on).

  conv_check.py --lib build-gpu/rt/lib/libeffrt_conv_check.so
                [--out OUT/conv_check.json] [--no-bench]

One line per check (PASS/FAIL/UNSUPPORTED). Exit 0 all passed, 1 something
failed, 3 no GPU (UNSUPPORTED: nothing is reported passed without one).
"""
import argparse
import ctypes
import json
import os
import sys
import time

F32, F16, BF16 = 0, 1, 2
TYPE_NAMES = {F32: "f32", F16: "f16", BF16: "bf16"}
FWD, BWD_DATA, BWD_WEIGHTS = 0, 1, 2
KIND_NAMES = {FWD: "fwd", BWD_DATA: "dgrad", BWD_WEIGHTS: "wgrad"}
# The smallest relative error bound: what rounding the result to the type
# costs, a few times over.
FLOOR = {F32: 1e-5, F16: 2e-3, BF16: 1.6e-2}
WORKSPACE_BYTES = 32 << 20   # the plan's library workspace (cuBLASLt's too)

# name, (N, C, H, W), F, (KH, KW), stride, dilation, (top, left, bottom,
# right) padding, groups.
SHAPES = [
    ("stem7x7s2", (2, 3, 40, 40), 16, (7, 7), (2, 2), (1, 1), (3, 3, 3, 3), 1),
    ("3x3s1", (4, 32, 14, 14), 32, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    ("3x3s2", (4, 32, 14, 14), 64, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1),
    ("1x1s2", (4, 32, 14, 14), 64, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1),
    ("1x1s1", (4, 24, 9, 9), 40, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),
    ("grouped", (2, 8, 9, 7), 6, (3, 3), (2, 1), (1, 2), (1, 2, 0, 1), 2),
    ("depthwise", (2, 16, 12, 12), 16, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16),
    ("odd", (3, 5, 11, 13), 7, (3, 2), (1, 2), (2, 1), (2, 0, 1, 3), 1),
]


def unsupported(why):
    print(f"UNSUPPORTED conv: {why}")
    sys.exit(3)


def load_library(path):
    here = os.path.dirname(os.path.abspath(path))
    for dep in ("libz.so.1", "libomp.so.5"):
        p = os.path.join(here, dep)
        if os.path.exists(p):
            try:
                ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
    lib = ctypes.CDLL(path)
    P, I64, I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
    lib.effrt_conv_check_error.restype = ctypes.c_char_p
    lib.effrt_conv_check_run.restype = ctypes.c_int
    lib.effrt_conv_check_run.argtypes = [P, I32, I32, P, P, P, P, P, I64, I32]
    return lib


def output_size(size, kernel, stride, dilation, before, after):
    span = size + before + after - dilation * (kernel - 1)
    return 0 if span <= 0 else (span - 1) // stride + 1


class Shape:
    def __init__(self, name, x, f, k, s, d, pad, g):
        self.name, self.x, self.f, self.k = name, x, f, k
        self.s, self.d, self.pad, self.g = s, d, pad, g
        n, c, h, w = x
        self.oh = output_size(h, k[0], s[0], d[0], pad[0], pad[2])
        self.ow = output_size(w, k[1], s[1], d[1], pad[1], pad[3])
        self.w = (f, c // g, k[0], k[1])
        self.y = (n, f, self.oh, self.ow)

    def args(self):
        n, c, h, w = self.x
        return [n, c, h, w, self.f, self.k[0], self.k[1], self.oh, self.ow,
                self.s[0], self.s[1], self.d[0], self.d[1], *self.pad, self.g]


class Convolutions:
    def __init__(self, lib, torch):
        self.lib, self.torch = lib, torch
        self.workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8,
                                     device="cuda")

    def run(self, shape, kind, type_code, a, b, out, args=None):
        values = args if args is not None else shape.args()
        arr = (ctypes.c_int64 * 18)(*values)
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        rc = self.lib.effrt_conv_check_run(
            stream, kind, type_code, arr, ctypes.c_void_p(a.data_ptr()),
            ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(out.data_ptr()),
            ctypes.c_void_p(self.workspace.data_ptr()), WORKSPACE_BYTES, 0)
        if rc != 0:
            raise RuntimeError(self.lib.effrt_conv_check_error().decode())

    def call(self, shape, kind, type_code, x, w, dy):
        torch = self.torch
        if kind == FWD:
            out = torch.empty(shape.y, dtype=x.dtype, device="cuda")
            self.run(shape, kind, type_code, x, w, out)
        elif kind == BWD_DATA:
            out = torch.empty(shape.x, dtype=x.dtype, device="cuda")
            self.run(shape, kind, type_code, dy, w, out)
        else:
            out = torch.empty(shape.w, dtype=x.dtype, device="cuda")
            self.run(shape, kind, type_code, x, dy, out)
        return out


def torch_conv(torch, shape, x, w, dy):
    """y, dx, dw of the convolution by autograd (torch's own kernels)."""
    F = torch.nn.functional
    x = x.detach().requires_grad_(True)
    w = w.detach().requires_grad_(True)
    t, l, b, r = shape.pad
    y = F.conv2d(F.pad(x, (l, r, t, b)), w, stride=shape.s,
                 dilation=shape.d, groups=shape.g)
    y.backward(dy)
    return y.detach(), x.grad.detach(), w.grad.detach()


def rel_err(torch, got, want):
    scale = want.abs().max().item() or 1.0
    return (got.double() - want).abs().max().item() / scale


def run_checks(torch, conv, results):
    gen = torch.Generator(device="cuda").manual_seed(0)
    dtypes = {F32: torch.float32, F16: torch.float16, BF16: torch.bfloat16}
    for spec in SHAPES:
        shape = Shape(*spec)
        x64 = torch.randn(shape.x, generator=gen, device="cuda",
                          dtype=torch.float64)
        w64 = torch.randn(shape.w, generator=gen, device="cuda",
                          dtype=torch.float64) * 0.2
        dy64 = torch.randn(shape.y, generator=gen, device="cuda",
                           dtype=torch.float64)
        for type_code, dt in dtypes.items():
            x, w, dy = (t.to(dt) for t in (x64, w64, dy64))
            # The reference from the same rounded inputs, in float64.
            ref = torch_conv(torch, shape, x.double(), w.double(), dy.double())
            theirs = torch_conv(torch, shape, x, w, dy)
            for kind in (FWD, BWD_DATA, BWD_WEIGHTS):
                name = "conv:%s-%s-%s" % (shape.name, KIND_NAMES[kind],
                                         TYPE_NAMES[type_code])
                try:
                    ours = conv.call(shape, kind, type_code, x, w, dy)
                    again = conv.call(shape, kind, type_code, x, w, dy)
                    torch.cuda.synchronize()
                except RuntimeError as e:
                    results.append(dict(check=name, status="FAIL",
                                        detail=str(e)))
                    print("FAIL        %-34s %s" % (name, e), flush=True)
                    continue
                err = rel_err(torch, ours, ref[kind])
                torch_err = rel_err(torch, theirs[kind], ref[kind])
                bound = max(2 * torch_err, FLOOR[type_code])
                same = torch.equal(ours, again)
                ok = err <= bound and same and bool(torch.isfinite(ours).all())
                detail = ("rel.err %.2e (torch's %.2e, bound %.2e)%s" % (
                    err, torch_err, bound,
                    "" if same else "; two runs differ"))
                results.append(dict(check=name,
                                    status="PASS" if ok else "FAIL",
                                    err=err, torch_err=torch_err,
                                    deterministic=same))
                print("%-11s %-34s %s" % ("PASS" if ok else "FAIL", name,
                                          detail), flush=True)


def check_refusal(torch, conv, results):
    name = "refuse:conv-output-size"
    shape = Shape(*SHAPES[1])
    x = torch.zeros(shape.x, device="cuda")
    w = torch.zeros(shape.w, device="cuda")
    y = torch.zeros(shape.y, device="cuda")
    args = shape.args()
    args[7] += 1   # an output height the windows do not give
    try:
        conv.run(shape, FWD, F32, x, w, y, args=args)
        ok, detail = False, "accepted"
    except RuntimeError as e:
        msg = str(e)
        ok = "does not match" in msg and "\n" not in msg
        detail = msg
    results.append(dict(check=name, status="PASS" if ok else "FAIL",
                        detail=detail))
    print("%-11s %-34s %s" % ("PASS" if ok else "FAIL", name, detail))


def time_ms(torch, fn, warmup=3, iters=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def bench(torch, conv, results):
    """Forward + both gradients of ResNet-18 layers, bf16, batch 32."""
    layers = [
        ("layer1 3x3", (32, 64, 56, 56), 64, (3, 3), (1, 1), (1, 1),
         (1, 1, 1, 1), 1),
        ("layer2 3x3 s2", (32, 64, 56, 56), 128, (3, 3), (2, 2), (1, 1),
         (1, 1, 1, 1), 1),
        ("layer3 3x3", (32, 256, 14, 14), 256, (3, 3), (1, 1), (1, 1),
         (1, 1, 1, 1), 1),
    ]
    torch.backends.cudnn.benchmark = True
    rows = []
    for spec in layers:
        shape = Shape(*spec)
        x = torch.randn(shape.x, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(shape.w, device="cuda", dtype=torch.bfloat16) * 0.05
        dy = torch.randn(shape.y, device="cuda", dtype=torch.bfloat16)

        def ours():
            for kind in (FWD, BWD_DATA, BWD_WEIGHTS):
                conv.call(shape, kind, BF16, x, w, dy)

        def theirs():
            torch_conv(torch, shape, x, w, dy)

        o, t = time_ms(torch, ours), time_ms(torch, theirs)
        rows.append(dict(layer=shape.name, effrt_ms=o, torch_ms=t))
        print("   %-16s effrt %.3f ms, torch cuDNN %.3f ms (%.2fx)" % (
            shape.name, o, t, o / t), flush=True)
    results.append(dict(check="bench:conv", status="INFO", rows=rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--no-bench", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        unsupported("no PyTorch (%s)" % e)
    if not torch.cuda.is_available():
        unsupported("no CUDA GPU visible to PyTorch")
    # TF32 off on both sides, as the plans choose by default.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.cuda.init()
    lib = load_library(args.lib)
    conv = Convolutions(lib, torch)
    results = []
    t0 = time.time()
    print("conv: effrt's cuDNN convolutions vs torch %s on %s" % (
        torch.__version__, torch.cuda.get_device_name()), flush=True)
    run_checks(torch, conv, results)
    check_refusal(torch, conv, results)
    if not args.no_bench:
        try:
            bench(torch, conv, results)
        except RuntimeError as e:
            results.append(dict(check="bench:conv", status="FAIL",
                                detail=str(e)))
            print("FAIL        bench:conv %s" % e)
    failed = [r for r in results if r["status"] == "FAIL"]
    passed = [r for r in results if r["status"] == "PASS"]
    print("conv checks: %d passed, %d failed (%.0f s)" % (
        len(passed), len(failed), time.time() - t0))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(results=results), f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

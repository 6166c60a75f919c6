#!/usr/bin/env python3
"""effrt's CUDA attention kernels against PyTorch, on a GPU.

Runs the FlashAttention-2 kernels of runtime/src/cuda/Attention.cu through
libeffrt_attention_check.so (ctypes; the runtime's CMake builds it, with
the kernels' fatbin embedded; no LLVM/MLIR needed) on PyTorch's tensors and
stream, and compares:
  - forward o and lse, backward dq, dk, dv with a float64 math reference
    computed from the same (rounded) inputs; the tolerance is twice the
    error of PyTorch's own scaled_dot_product_attention in the same dtype
    (plus a small floor): causal and not, D 64 and 128, bf16/fp16/f32, T
    not a multiple of the tiles, Tq != Tk;
  - operands read and written in place through strides (q, k, v as views
    of one [B, T, 3, H, D] projection, o and dO [B, T, H, D], dq, dk, dv
    into one [B, T, 3, H, D] gradient), as compiled steps call them;
  - determinism: two backward runs equal bit for bit;
  - D = 64's two tile sets (16 and 32 rows a warp, AttentionTiles.h)
    give the same bits;
  - a refusal: an unsupported head dimension is one error line;
and times forward + backward at GPT-2 124M's shape (32 x 12 x 1024 x 64,
bf16, causal), with each tile set, against torch's SDPA flash backend.
The JSON's "best_warp_rows" is the faster set (scripts/gpu/run.sh runs
the suite and the benchmark with it, EFFRT_ATTENTION_WARP_ROWS).

  attention_check.py --lib build-gpu/rt/lib/libeffrt_attention_check.so
                     [--out OUT/attention_check.json] [--no-bench]

One line per check (PASS/FAIL/UNSUPPORTED). Exit 0 all passed, 1 something
failed, 3 no GPU (UNSUPPORTED: nothing is reported passed without one).
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time

F32, F16, BF16 = 0, 1, 2
TYPE_NAMES = {F32: "f32", F16: "f16", BF16: "bf16"}


def unsupported(why):
    print(f"UNSUPPORTED attention: {why}")
    sys.exit(3)


def load_library(path):
    # The libraries carried beside it (libz, libomp) when the image lacks them.
    here = os.path.dirname(os.path.abspath(path))
    for dep in ("libz.so.1", "libomp.so.5"):
        p = os.path.join(here, dep)
        if os.path.exists(p):
            try:
                ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
    lib = ctypes.CDLL(path)
    P, I64, F, I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_int32
    lib.effrt_attention_check_built.restype = ctypes.c_int
    lib.effrt_attention_check_error.restype = ctypes.c_char_p
    lib.effrt_attention_check_fwd.restype = ctypes.c_int
    lib.effrt_attention_check_fwd.argtypes = [P, P, P, P, P, P, I64, I64, I64, I64, F, I32, I32]
    lib.effrt_attention_check_bwd.restype = ctypes.c_int
    lib.effrt_attention_check_bwd.argtypes = [P] * 11 + [I64, I64, I64, I64, F, I32, I32]
    lib.effrt_attention_check_use_warp_rows.restype = ctypes.c_int
    lib.effrt_attention_check_use_warp_rows.argtypes = [I32]
    lib.effrt_attention_check_fwd_strided.restype = ctypes.c_int
    lib.effrt_attention_check_fwd_strided.argtypes = (
        [P] * 6 + [I64] * 5 + [F, I32, I32, P])
    lib.effrt_attention_check_bwd_strided.restype = ctypes.c_int
    lib.effrt_attention_check_bwd_strided.argtypes = (
        [P] * 11 + [I64] * 5 + [F, I32, I32, P])
    return lib


def strides_of(*tensors):
    """The B1, B2, T element strides of [B1, B2, T, D] views (D contiguous),
    as the int64 array the strided entry points take."""
    values = []
    for t in tensors:
        assert t.stride(3) == 1, "D must be contiguous"
        values += [t.stride(0), t.stride(1), t.stride(2)]
    return (ctypes.c_int64 * len(values))(*values)


class Kernels:
    def __init__(self, lib, torch):
        self.lib, self.torch = lib, torch

    def _stream(self):
        return ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)

    def _check(self, rc):
        if rc != 0:
            raise RuntimeError(self.lib.effrt_attention_check_error().decode())

    def use_warp_rows(self, rows):
        self._check(self.lib.effrt_attention_check_use_warp_rows(rows))

    def forward(self, q, k, v, scale, causal, type_code):
        torch = self.torch
        B, H, Tq, D = q.shape
        o = torch.empty_like(q)
        lse = torch.empty(B, H, Tq, dtype=torch.float32, device=q.device)
        self._check(self.lib.effrt_attention_check_fwd(
            self._stream(), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
            lse.data_ptr(), B * H, Tq, k.shape[2], D, scale, int(causal), type_code))
        return o, lse

    def backward(self, q, k, v, o, lse, dout, scale, causal, type_code):
        torch = self.torch
        B, H, Tq, D = q.shape
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        delta = torch.empty(B * H * Tq, dtype=torch.float32, device=q.device)
        self._check(self.lib.effrt_attention_check_bwd(
            self._stream(), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
            lse.data_ptr(), dout.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
            delta.data_ptr(), B * H, Tq, k.shape[2], D, scale, int(causal), type_code))
        return dq, dk, dv


    def forward_into(self, q, k, v, o, scale, causal, type_code):
        """The strided forward: q, k, v, o any [B, H, T, D] views."""
        torch = self.torch
        B, H, Tq, D = q.shape
        lse = torch.empty(B, H, Tq, dtype=torch.float32, device=q.device)
        self._check(self.lib.effrt_attention_check_fwd_strided(
            self._stream(), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
            lse.data_ptr(), B * H, H, Tq, k.shape[2], D, scale, int(causal), type_code,
            strides_of(q, k, v, o)))
        return lse

    def backward_into(self, q, k, v, o, lse, dout, dq, dk, dv, scale, causal,
                      type_code):
        """The strided backward: every operand any [B, H, T, D] view."""
        torch = self.torch
        B, H, Tq, D = q.shape
        delta = torch.empty(B * H * Tq, dtype=torch.float32, device=q.device)
        self._check(self.lib.effrt_attention_check_bwd_strided(
            self._stream(), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
            lse.data_ptr(), dout.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
            delta.data_ptr(), B * H, H, Tq, k.shape[2], D, scale, int(causal), type_code,
            strides_of(q, k, v, o, dout, dq, dk, dv)))


def packed_views(torch, B, H, T, D, dt, gen=None, fill=None):
    """q, k, v as [B, H, T, D] views of one [B, T, 3, H, D] tensor."""
    if fill is None:
        qkv = torch.randn(B, T, 3, H, D, device="cuda", generator=gen).to(dt)
    else:
        qkv = torch.full((B, T, 3, H, D), fill, device="cuda", dtype=dt)
    return qkv, [qkv[:, :, i].transpose(1, 2) for i in range(3)]


def judge(torch, type_code, ours, q, k, v, dout, scale, causal):
    """(fails, errors) of our o, lse, dq, dk, dv against the float64
    reference, each within twice PyTorch's own low-precision error plus a
    floor (lse: an absolute bound)."""
    o, lse, dq, dk, dv = ours
    ro, rlse, rdq, rdk, rdv = reference(torch, q, k, v, dout, scale, causal)
    to, tdq, tdk, tdv = torch_low_precision(torch, q.contiguous(), k.contiguous(),
                                            v.contiguous(), dout.contiguous(),
                                            scale, causal)
    floor = 1e-3 if type_code != F32 else 1e-5
    fails, errs = [], {}
    for label, mine, ref, theirs in (("o", o, ro, to), ("dq", dq, rdq, tdq),
                                     ("dk", dk, rdk, tdk), ("dv", dv, rdv, tdv)):
        e, et = max_err(mine, ref), max_err(theirs, ref)
        tol = 2.0 * et + floor * max(1.0, ref.abs().max().item())
        errs[label] = {"err": e, "torch_err": et, "tol": tol}
        if not math.isfinite(e) or e > tol:
            fails.append(f"{label} {e:.3g} > {tol:.3g} (torch {et:.3g})")
    e = max_err(lse, rlse)
    tol = 2e-3 if type_code != F32 else 1e-4
    errs["lse"] = {"err": e, "tol": tol}
    if not math.isfinite(e) or e > tol:
        fails.append(f"lse {e:.3g} > {tol:.3g}")
    return fails, errs


def run_check(torch, results, name, body):
    """Runs one check: body() returns (fails, errors); prints its line,
    appends it to results, returns whether it passed. An exception is a
    failure with its message."""
    line = {"check": name}
    try:
        fails, errs = body()
        line["errors"] = errs
        summary = " ".join(f"{k} {v['err']:.2e}" for k, v in errs.items())
        line["status"] = "FAIL" if fails else "PASS"
        print(f"{line['status']} {name}" + (f": {'; '.join(fails)}" if fails else "")
              + f"  max err {summary}")
    except Exception as e:  # noqa: BLE001
        fails = [str(e)]
        line["status"] = "FAIL"
        line["error"] = str(e)
        print(f"FAIL {name}: {e}")
        torch.cuda.synchronize()
    results.append(line)
    return not fails


def check_packed(torch, kernels, results, gen):
    """The strided entry points on a GPT's layout against the same float64
    reference; the padding of dq, dk, dv's buffer must stay untouched."""
    dtypes = {F32: torch.float32, F16: torch.float16, BF16: torch.bfloat16}
    ok = True
    for type_code, D in ((BF16, 64), (F16, 128), (F32, 64)):
        B, H, T = 2, 4, 300
        dt = dtypes[type_code]
        name = f"attention:{TYPE_NAMES[type_code]}-d{D}-causal-packed-{B}x{H}x{T}"

        def body():
            _, (q, k, v) = packed_views(torch, B, H, T, D, dt, gen)
            o_bthd = torch.full((B, T, H, D), float("nan"), device="cuda", dtype=dt)
            o = o_bthd.transpose(1, 2)
            dout = torch.randn(B, T, H, D, device="cuda", generator=gen).to(dt).transpose(1, 2)
            grad, (dq, dk, dv) = packed_views(torch, B, H, T, D, dt, fill=float("nan"))
            scale = 1.0 / math.sqrt(D)
            lse = kernels.forward_into(q, k, v, o, scale, True, type_code)
            kernels.backward_into(q, k, v, o, lse, dout, dq, dk, dv, scale, True, type_code)
            torch.cuda.synchronize()
            fails, errs = judge(torch, type_code, (o, lse, dq, dk, dv), q, k, v, dout,
                                scale, True)
            if torch.isnan(grad).any() or torch.isnan(o_bthd).any():
                fails.append("an element of o or of the gradient buffer was not written")
            return fails, errs
        ok = run_check(torch, results, name, body) and ok
    return ok


def reference(torch, q, k, v, dout, scale, causal):
    """float64 math attention on the same (rounded) inputs: o, lse, dq, dk, dv."""
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    s = (q64 @ k64.transpose(-1, -2)) * scale
    if causal:
        Tq, Tk = s.shape[-2:]
        keep = torch.ones(Tq, Tk, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    o = torch.softmax(s, dim=-1) @ v64
    o.backward(dout.double())
    return o.detach(), lse.detach(), q64.grad, k64.grad, v64.grad


def torch_low_precision(torch, q, k, v, dout, scale, causal):
    """PyTorch's own SDPA in the inputs' dtype: o, dq, dk, dv."""
    F = torch.nn.functional
    qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
    Tq, Tk = q.shape[-2], k.shape[-2]
    if causal and Tq != Tk:
        # Top-left aligned (j > i masked), as the kernels and the
        # reference: spelled out, whatever a backend does with is_causal.
        keep = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril()
        o = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=keep, scale=scale)
    else:
        o = F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal, scale=scale)
    o.backward(dout)
    return o.detach(), qs.grad, ks.grad, vs.grad


def max_err(a, b):
    return (a.double() - b.double()).abs().max().item()


def run_checks(torch, kernels, results):
    dtypes = {F32: torch.float32, F16: torch.float16, BF16: torch.bfloat16}
    shapes = [  # B, H, Tq, Tk
        (2, 3, 77, 77),
        (1, 3, 1000, 1000),
        (2, 2, 130, 77),
    ]
    ok = True
    gen = torch.Generator(device="cuda").manual_seed(0)
    for type_code in (BF16, F16, F32):
        dt = dtypes[type_code]
        for D in (64, 128):
            for causal in (False, True):
                for (B, H, Tq, Tk) in shapes:
                    name = (f"attention:{TYPE_NAMES[type_code]}-d{D}-"
                            f"{'causal' if causal else 'full'}-{B}x{H}x{Tq}x{Tk}")
                    # A sharper softmax for some: the online max matters.
                    sharp = 2.0 if Tq == 130 else 1.0
                    q = (torch.randn(B, H, Tq, D, device="cuda", generator=gen) * sharp).to(dt)
                    k = torch.randn(B, H, Tk, D, device="cuda", generator=gen).to(dt)
                    v = torch.randn(B, H, Tk, D, device="cuda", generator=gen).to(dt)
                    dout = torch.randn(B, H, Tq, D, device="cuda", generator=gen).to(dt)
                    scale = 1.0 / math.sqrt(D)

                    def body():
                        o, lse = kernels.forward(q, k, v, scale, causal, type_code)
                        dq, dk, dv = kernels.backward(q, k, v, o, lse, dout, scale,
                                                      causal, type_code)
                        torch.cuda.synchronize()
                        return judge(torch, type_code, (o, lse, dq, dk, dv),
                                     q, k, v, dout, scale, causal)
                    ok = run_check(torch, results, name, body) and ok

    ok = check_packed(torch, kernels, results, gen) and ok

    # Determinism: the backward twice, bits equal (no atomics).
    name = "attention:deterministic-bwd-bf16-d64-causal"
    try:
        B, H, T, D = 2, 4, 1000, 64
        q, k, v, dout = (torch.randn(B, H, T, D, device="cuda", generator=gen).bfloat16()
                         for _ in range(4))
        o, lse = kernels.forward(q, k, v, 0.125, True, BF16)
        first = kernels.backward(q, k, v, o, lse, dout, 0.125, True, BF16)
        second = kernels.backward(q, k, v, o, lse, dout, 0.125, True, BF16)
        o2, lse2 = kernels.forward(q, k, v, 0.125, True, BF16)
        torch.cuda.synchronize()
        same = all(torch.equal(a, b) for a, b in zip(first, second))
        same = same and torch.equal(o, o2) and torch.equal(lse, lse2)
        status = "PASS" if same else "FAIL"
        ok = ok and same
        print(f"{status} {name}: {'bit-identical' if same else 'results differ between runs'}")
    except Exception as e:  # noqa: BLE001
        ok, status = False, "FAIL"
        print(f"FAIL {name}: {e}")
    results.append({"check": name, "status": status})

    # D = 64's tile sets: 32 and 16 rows a warp give the same bits.
    for type_code in (BF16, F16):
        for causal in (True, False):
            name = (f"attention:warp-rows-same-bits-{TYPE_NAMES[type_code]}-d64-"
                    f"{'causal' if causal else 'full'}")
            try:
                B, H, Tq, Tk, D = 2, 3, 1000, 777, 64
                q = torch.randn(B, H, Tq, D, device="cuda", generator=gen).to(dtypes[type_code])
                k, v = (torch.randn(B, H, Tk, D, device="cuda", generator=gen).to(dtypes[type_code])
                        for _ in range(2))
                dout = torch.randn(B, H, Tq, D, device="cuda", generator=gen).to(dtypes[type_code])
                runs = []
                for rows in (32, 16):
                    kernels.use_warp_rows(rows)
                    o, lse = kernels.forward(q, k, v, 0.125, causal, type_code)
                    runs.append((o, lse) + kernels.backward(q, k, v, o, lse, dout, 0.125,
                                                            causal, type_code))
                kernels.use_warp_rows(32)
                torch.cuda.synchronize()
                names = ("o", "lse", "dq", "dk", "dv")
                differ = [n for n, a, b in zip(names, *runs)
                          if not torch.equal(a, b)]
                status = "FAIL" if differ else "PASS"
                why = ("o, lse, dq, dk, dv bit-identical" if not differ
                       else "16 and 32 rows a warp differ in " + ", ".join(differ))
            except Exception as e:  # noqa: BLE001
                status, why = "FAIL", str(e)
            ok = ok and status == "PASS"
            print(f"{status} {name}: {why}")
            results.append({"check": name, "status": status})

    # Refusals: one error line, nothing launched.
    q = torch.zeros(1, 1, 8, 96, device="cuda", dtype=torch.bfloat16)
    ok = expect_refusal(results, "attention:refuses-d96-bf16", "head dimension 96",
                        lambda: kernels.forward(q, q, q, 0.1, False, BF16)) and ok
    ok = expect_refusal(results, "attention:refuses-warp-rows-24", "24 rows a warp",
                        lambda: kernels.use_warp_rows(24)) and ok
    return ok


def expect_refusal(results, name, needle, call):
    """PASS when `call` fails with one error line that names `needle`."""
    try:
        call()
        status, why = "FAIL", "no error"
    except RuntimeError as e:
        msg = str(e)
        good = needle in msg and "\n" not in msg
        status, why = ("PASS" if good else "FAIL"), msg
    print(f"{status} {name}: {why}")
    results.append({"check": name, "status": status, "message": why})
    return status == "PASS"


def time_ms(torch, fn, warmup=3, iters=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def bench(torch, kernels, results):
    B, H, T, D = 32, 12, 1024, 64
    scale = 1.0 / math.sqrt(D)
    gen = torch.Generator(device="cuda").manual_seed(1)
    q, k, v, dout = (torch.randn(B, H, T, D, device="cuda", generator=gen).bfloat16()
                     for _ in range(4))
    o, lse = kernels.forward(q, k, v, scale, True, BF16)
    # Each tile set (AttentionTiles.h); the faster is what run.sh uses.
    by_rows = {}
    for rows in (32, 16):
        kernels.use_warp_rows(rows)
        f = time_ms(torch, lambda: kernels.forward(q, k, v, scale, True, BF16))
        b = time_ms(torch, lambda: kernels.backward(q, k, v, o, lse, dout, scale, True, BF16))
        by_rows[rows] = {"fwd_ms": f, "bwd_ms": b, "fwd_bwd_ms": f + b}
        print(f"BENCH attention warp rows {rows}: fwd {f:.3f} ms, bwd {b:.3f} ms, "
              f"fwd+bwd {f + b:.3f} ms")
    best = min(by_rows, key=lambda r: by_rows[r]["fwd_bwd_ms"])
    kernels.use_warp_rows(best)
    results.append({"best_warp_rows": best})
    ours_fwd, ours_bwd = by_rows[best]["fwd_ms"], by_rows[best]["bwd_ms"]
    row = {"shape": [B, H, T, D], "dtype": "bf16", "causal": True,
           "warp_rows": {str(r): t for r, t in by_rows.items()},
           "best_warp_rows": best, "effrt_fwd_ms": ours_fwd, "effrt_bwd_ms": ours_bwd,
           "effrt_fwd_bwd_ms": ours_fwd + ours_bwd}
    F = torch.nn.functional
    qs, ks, vs = (t.clone().requires_grad_() for t in (q, k, v))

    def torch_fwd():
        return F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=scale)

    def torch_fwd_bwd():
        out = torch_fwd()
        out.backward(dout)

    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            row["torch_flash_fwd_ms"] = time_ms(torch, torch_fwd)
            row["torch_flash_fwd_bwd_ms"] = time_ms(torch, torch_fwd_bwd)
        row["torch_backend"] = "flash"
    except Exception as e:  # noqa: BLE001
        row["torch_flash_error"] = str(e)
        row["torch_flash_fwd_ms"] = time_ms(torch, torch_fwd)
        row["torch_flash_fwd_bwd_ms"] = time_ms(torch, torch_fwd_bwd)
        row["torch_backend"] = "default"
    # Useful FLOPs of causal attention: forward 2 products over half the
    # square, backward 2.5 times that.
    flops_fwd = 4.0 * B * H * T * T * D / 2
    row["effrt_fwd_tflops"] = flops_fwd / ours_fwd / 1e9
    row["effrt_bwd_tflops"] = 2.5 * flops_fwd / ours_bwd / 1e9
    # The layout a compiled GPT step calls them with: q, k, v in place in
    # the [B, T, 3, H, D] projection, o and dO [B, T, H, D].
    _, (pq, pk, pv) = packed_views(torch, B, H, T, D, torch.bfloat16, gen)
    po = torch.empty(B, T, H, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    pdo = dout.transpose(1, 2).contiguous().transpose(1, 2)
    _, (pdq, pdk, pdv) = packed_views(torch, B, H, T, D, torch.bfloat16, fill=0.0)
    plse = kernels.forward_into(pq, pk, pv, po, scale, True, BF16)
    row["effrt_packed_fwd_ms"] = time_ms(
        torch, lambda: kernels.forward_into(pq, pk, pv, po, scale, True, BF16))
    row["effrt_packed_bwd_ms"] = time_ms(
        torch, lambda: kernels.backward_into(pq, pk, pv, po, plse, pdo, pdq, pdk, pdv,
                                             scale, True, BF16))
    print(f"BENCH attention 32x12x1024x64 bf16 causal, packed [B, T, 3, H, D] operands: "
          f"effrt fwd {row['effrt_packed_fwd_ms']:.3f} ms, bwd {row['effrt_packed_bwd_ms']:.3f} ms")
    print(f"BENCH attention 32x12x1024x64 bf16 causal ({best} rows a warp): effrt fwd {ours_fwd:.3f} ms "
          f"({row['effrt_fwd_tflops']:.0f} TFLOP/s), bwd {ours_bwd:.3f} ms "
          f"({row['effrt_bwd_tflops']:.0f} TFLOP/s), fwd+bwd {ours_fwd + ours_bwd:.3f} ms; "
          f"torch SDPA ({row['torch_backend']}) fwd {row['torch_flash_fwd_ms']:.3f} ms, "
          f"fwd+bwd {row['torch_flash_fwd_bwd_ms']:.3f} ms")
    results.append({"bench": row})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True, help="libeffrt_attention_check.so")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--no-bench", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    try:
        import torch
    except ImportError:
        unsupported("no PyTorch")
    if not torch.cuda.is_available():
        unsupported("no GPU visible to PyTorch")
    major, minor = torch.cuda.get_device_capability()
    if major < 8:
        unsupported(f"the kernels need sm_80 or later (this GPU is sm_{major}{minor})")
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the primary context, current on this thread
    print(f"== {torch.cuda.get_device_name()} (sm_{major}{minor}), torch {torch.__version__}")
    try:
        lib = load_library(args.lib)
    except OSError as e:
        print(f"FAIL attention: cannot load {args.lib}: {e}")
        return 1
    if not lib.effrt_attention_check_built():
        print("FAIL attention: the runtime was built without nvcc: it has no attention kernels")
        return 1
    kernels = Kernels(lib, torch)
    results = []
    ok = run_checks(torch, kernels, results)
    if not args.no_bench:
        try:
            bench(torch, kernels, results)
        except Exception as e:  # noqa: BLE001
            ok = False
            print(f"FAIL attention:bench: {e}")
    passed = sum(1 for r in results if r.get("status") == "PASS")
    failed = sum(1 for r in results if r.get("status") == "FAIL")
    print(f"== attention: {passed} passed, {failed} failed in {time.time() - t0:.1f} s")
    if args.out:
        with open(args.out, "w") as f:
            best = [r["best_warp_rows"] for r in results if "best_warp_rows" in r]
            json.dump({"results": results, "ok": ok,
                       "best_warp_rows": best[0] if best else None}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Trains a model as people write it (torchvision, torch.nn) with effopt and
with PyTorch 1.13, exported the ordinary way, and compares them.

    zoo_vs_torch.py --model zoo_vision:resnet18 --bin BUILD/bin \\
        --libeffrt BUILD/lib/libeffrt.so --work DIR --steps 3 \\
        [--mode stepwise|trajectory] [--effc=--remat=full]

--model names MODULE:FUNCTION, a function of a module beside this script
(zoo_*.py) that returns a ZooCase: the module (its forward takes the graph
inputs and returns the loss, or a tuple with the loss first), the batch size
and batches(step) -> {input name: numpy array}. The model is exported as a
user would (torch.onnx.export, TRAINING mode, do_constant_folding=False,
opset 17), or written by the case's own write_onnx from the module's state,
compiled with effc and run through libeffrt's C interface.

Modes:
- stepwise (default): before every step, effopt's state is set to PyTorch's
  (parameters, buffers, optimizer state), both take one step on the same
  batch, and the loss and the whole updated state are compared. Chaotic
  trajectories (BatchNorm nets with tiny batches) cannot drift apart: every
  step is checked from the same state.
  Each tensor is compared with a float64 PyTorch step from the same state:
  effopt may be --ref-factor times as far from it as PyTorch float32 is.
  A ReLU input within float32 rounding of zero can still take the other
  side in one of the two (a real discontinuity, not a bug): with SGD, a
  mismatch that the fewest such flips explain across every tensor at once
  passes, and the flips are named (switch_points.py); otherwise a failure
  names the tensor to look at.
- trajectory: both train from the same initial state without resyncing;
  per-step losses and the final state are compared.

Also checks that every trainable parameter of PyTorch is trained by effopt
and nothing else is (buffers, frozen parameters keep their roles).
Prints one line per step and "<model>: PASS" or "<model>: FAIL (...)".
"""
import argparse
import copy
import ctypes
import importlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import switch_points  # noqa: E402
from train_vs_torch import export, run  # noqa: E402


@dataclass
class ZooCase:
    model: torch.nn.Module
    batch_size: int
    batches: Callable[[int], Dict[str, np.ndarray]]
    # Names of the graph outputs after the loss (the exporter needs one name
    # per output the forward returns).
    extra_outputs: tuple = ()
    # Tolerances for this model (fp32 defaults; deep nets may need more).
    rtol: float = 1e-3
    atol: float = 1e-5
    # Stepwise: how many times PyTorch float32's distance from float64 effopt
    # may be from it.
    ref_factor: float = 10.0
    norm_rtol: float = 1e-2
    notes: str = ""
    effc_flags: list = field(default_factory=list)
    # Writes the ONNX graph itself, write_onnx(path, {name: numpy array of
    # the model's state}), instead of torch.onnx.export (graphs built with
    # onnx.helper, like examples/llama/make_llama_onnx.py).
    write_onnx: Callable = None


NP_DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64,
             "int32": np.int32, "bool": np.bool_, "float16": np.float16,
             "uint8": np.uint8, "int8": np.int8}


class Session:
    """An effrt_session through ctypes."""

    def __init__(self, libeffrt, effx):
        self.lib = lib = ctypes.CDLL(libeffrt, mode=ctypes.RTLD_GLOBAL)
        vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
        lib.effrt_session_open.restype = vp
        lib.effrt_session_open.argtypes = [cp]
        lib.effrt_session_close.argtypes = [vp]
        lib.effrt_session_manifest.restype = cp
        lib.effrt_session_manifest.argtypes = [vp]
        lib.effrt_session_set_input.argtypes = [vp, cp, vp, sz]
        lib.effrt_session_step.argtypes = [vp, ctypes.POINTER(ctypes.c_float)]
        lib.effrt_session_read_state.argtypes = [vp, cp, vp, sz]
        lib.effrt_session_write_state.argtypes = [vp, cp, vp, sz]
        lib.effrt_last_error.restype = cp
        lib.effrt_set_num_threads(1)
        self.handle = lib.effrt_session_open(effx.encode())
        if not self.handle:
            raise SystemExit("effrt_session_open: " + self.error())
        self.manifest = json.loads(lib.effrt_session_manifest(self.handle))
        self.state = {e["name"]: e for e in self.manifest["state"]}
        self.inputs = {e["name"]: e for e in self.manifest["inputs"]}

    def error(self):
        return self.lib.effrt_last_error().decode(errors="replace")

    def check(self, status, what):
        if status != 0:
            raise SystemExit("%s: %s" % (what, self.error()))

    def read(self, name):
        e = self.state[name]
        a = np.empty(e["shape"], dtype=NP_DTYPES[e["dtype"]])
        self.check(self.lib.effrt_session_read_state(
            self.handle, name.encode(), a.ctypes.data, a.nbytes), "read " + name)
        return a

    def write(self, name, value):
        e = self.state[name]
        a = np.ascontiguousarray(value, dtype=NP_DTYPES[e["dtype"]])
        if list(a.shape) != list(e["shape"]):
            a = a.reshape(e["shape"])
        self.check(self.lib.effrt_session_write_state(
            self.handle, name.encode(), a.ctypes.data, a.nbytes), "write " + name)

    def step(self, batch):
        for name, e in self.inputs.items():
            a = np.ascontiguousarray(batch[name], dtype=NP_DTYPES[e["dtype"]])
            self.check(self.lib.effrt_session_set_input(
                self.handle, name.encode(), a.ctypes.data, a.nbytes),
                "input " + name)
        loss = ctypes.c_float()
        self.check(self.lib.effrt_session_step(self.handle, ctypes.byref(loss)),
                   "step")
        return loss.value


def torch_state(model):
    """{name: tensor} of parameters and buffers, tied tensors once (under
    the first name, as the ONNX initializers)."""
    out, seen = {}, set()
    for k, v in model.state_dict(keep_vars=True).items():
        if v.data_ptr() in seen and v.numel() > 0:
            continue
        seen.add(v.data_ptr())
        out[k] = v
    return out


def make_optimizer(model, args):
    params = [p for p in model.parameters() if p.requires_grad]
    if args.optimizer == "sgd":
        return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum,
                               weight_decay=args.weight_decay)
    return torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay)


def effc_flags(args):
    flags = ["--optimizer", args.optimizer, "--lr", repr(args.lr),
             "--weight-decay", repr(args.weight_decay)]
    if args.optimizer == "sgd":
        flags += ["--momentum", repr(args.momentum)]
    return flags


def optimizer_slots(opt, param_names):
    """{effx state name: tensor} of PyTorch's optimizer state."""
    out = {}
    for p, name in param_names.items():
        for slot, v in opt.state.get(p, {}).items():
            if torch.is_tensor(v) and v.dim() > 0:
                out["optimizer.%s.%s" % (name, slot)] = v
    return out


def compare(what, got, want, exact, before, rtol, atol, ref_factor,
            norm_rtol):
    """A failure line, or None. `exact` is the float64 result from the same
    state (None in trajectory mode): effopt may then also be `ref_factor`
    times as far from it as PyTorch's float32 result is (largest difference
    over the tensor) -- summation order alone moves a BatchNorm net's
    gradients by more than any fixed tolerance. Where that fails, the
    tensor still passes when its distance from float64 is within norm_rtol
    of the change the step made to it (L2 norms): a ReLU or max-pool input
    within rounding of its switch point routes a few gradients differently
    in any two implementations, while a wrong gradient misses by O(1)."""
    if got.shape != want.shape:
        return "%s: shape %s, torch %s" % (what, got.shape, want.shape)
    g, w = got.astype(np.float64), want.astype(np.float64)
    bound = atol + rtol * np.abs(w)
    if exact is not None:
        g_err = np.abs(g - exact)
        torch_err = np.abs(w - exact).max() if w.size else 0.0
        bad = g_err > bound + ref_factor * torch_err
        if not bad.any():
            return None
        change = np.linalg.norm(exact - before) if before is not None else 0.0
        off = np.linalg.norm(g - exact)
        if change > 0 and off <= norm_rtol * change:
            print("      %s: %d values off, within %.1e of the step's change "
                  "in norm" % (what, int(bad.sum()), off / change))
            return None
        return ("%s: %d of %d values differ from float64, max abs err %.3g "
                "(torch float32's %.3g), %.2g of the step's change in norm"
                % (what, int(bad.sum()), g.size, g_err.max(), torch_err,
                   off / change if change > 0 else float("inf")))
    err = np.abs(g - w)
    bad = err > bound
    if bad.any():
        return "%s: %d of %d values differ, max abs err %.3g" % (
            what, int(bad.sum()), err.size, err.max())
    return None


def as_torch(array, dtype=None):
    t = torch.from_numpy(array)
    return t.to(dtype) if dtype is not None and t.is_floating_point() else t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="MODULE:FUNCTION")
    ap.add_argument("--bin", required=True, help="directory with effc")
    ap.add_argument("--libeffrt", required=True, help="path of libeffrt.so")
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--mode", choices=["stepwise", "trajectory"],
                    default="stepwise")
    ap.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--rtol", type=float, default=None)
    ap.add_argument("--atol", type=float, default=None)
    ap.add_argument("--ref-factor", type=float, default=None,
                    help="stepwise: effopt may be this many times as far "
                         "from float64 as PyTorch float32 is")
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag (e.g. --effc=--remat=full)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    os.makedirs(args.work, exist_ok=True)

    module_name, func_name = args.model.split(":")
    case = getattr(importlib.import_module(module_name), func_name)()
    label = func_name
    rtol = case.rtol if args.rtol is None else args.rtol
    atol = case.atol if args.atol is None else args.atol
    ref_factor = case.ref_factor if args.ref_factor is None else args.ref_factor
    model = case.model
    model.train()
    for path, m in model.named_modules():
        # torchvision's StochasticDepth (Swin, ConvNeXt) drops rows at random
        # too.
        if (isinstance(m, torch.nn.modules.dropout._DropoutNd)
                or type(m).__name__ == "StochasticDepth") and m.p > 0:
            raise SystemExit("%s: dropout %s has p=%g; effopt and PyTorch draw "
                             "different masks: set p=0 for a comparison"
                             % (label, path, m.p))

    first = case.batches(0)
    names = list(first)
    onnx_path = os.path.join(args.work, label + ".onnx")
    if case.write_onnx is not None:
        case.write_onnx(onnx_path, {k: v.detach().numpy() for k, v in
                                    torch_state(model).items()})
    else:
        export(model, tuple(torch.from_numpy(first[k]) for k in names), names,
               onnx_path, output_names=("loss",) + tuple(case.extra_outputs))
    effx = os.path.join(args.work, label + ".effx")
    run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx]
        + effc_flags(args) + case.effc_flags + args.effc)

    session = Session(args.libeffrt, effx)
    state = torch_state(model)
    param_names = {v: k for k, v in state.items()
                   if isinstance(v, torch.nn.Parameter)}
    failures = []

    # Roles: exactly PyTorch's trainable parameters are trained.
    for name, v in state.items():
        entry = session.state.get(name)
        trainable = isinstance(v, torch.nn.Parameter) and v.requires_grad
        if entry is None:
            if trainable:
                failures.append("parameter %s is not in the compiled state" % name)
            continue
        if trainable != (entry["role"] == "trainable"):
            failures.append("%s: role %s, but PyTorch %s it" % (
                name, entry["role"], "trains" if trainable else "does not train"))

    opt = make_optimizer(model, args)

    def sync(step):
        """effopt's state := PyTorch's."""
        for name, v in state.items():
            if name in session.state:
                session.write(name, v.detach().numpy())
        for name, v in optimizer_slots(opt, param_names).items():
            if name in session.state:
                session.write(name, v.detach().numpy())
        counter = session.manifest.get("step_counter")
        if counter:
            session.write(counter, np.array(step, dtype=np.int64))

    # The float64 twin that gives the exact answer of each step.
    model64 = copy.deepcopy(model).double() if args.mode == "stepwise" else None
    opt64 = make_optimizer(model64, args) if model64 is not None else None
    state64 = torch_state(model64) if model64 is not None else {}
    names64 = ({v: k for k, v in state64.items()
                if isinstance(v, torch.nn.Parameter)} if model64 else {})

    def torch_step(m, o, batch, dtype):
        o.zero_grad()
        out = m(*[as_torch(batch[k], dtype) for k in names])
        loss = out[0] if isinstance(out, (tuple, list)) else out
        loss.backward()
        o.step()
        return float(loss)

    def explain_by_flips(pre32, pre64, batch, step, compared, exact, before,
                         off):
        """The mismatches `off` left once the fewest switch-point flips that
        account for them across every tensor are taken out
        (switch_points.py); all of them when that does not."""
        candidates, count = switch_points.flip_candidates(
            pre32, pre64, [as_torch(batch[k]) for k in names],
            [as_torch(batch[k], torch.float64) for k in names], ref_factor)
        print("      step %d: %d ReLU-like inputs within %g times torch "
              "float32's error of a switch point%s" % (
                  step, count, ref_factor,
                  "" if candidates is not None else " (too many to try)"))
        if not candidates:
            return off
        candidates = [(label, switch_points.sgd_update_changes(g, args.lr))
                      for label, g in candidates]
        residual, weight = {}, {}
        for name, (got_v, want_v) in compared.items():
            if name not in exact:
                continue
            e = exact[name]
            residual[name] = got_v.astype(np.float64) - e
            weight[name] = 1.0 / (atol + rtol * np.abs(want_v) + ref_factor
                                  * np.abs(want_v.astype(np.float64) - e).max())
        chosen, residual = switch_points.explain(candidates, residual, weight)
        still = []
        for name, (got_v, want_v) in compared.items():
            if name in residual:
                got_v = exact[name] + residual[name]
            bad = compare("step %d %s" % (step, name), got_v, want_v,
                          exact.get(name), before.get(name), rtol, atol,
                          ref_factor, case.norm_rtol)
            if bad:
                still.append(bad)
        if still:
            return off
        for i in chosen:
            print("      step %d: explained by a flip at %s"
                  % (step, candidates[i][0]))
        return []

    sync(0)
    print("step  effopt        torch         rel.err")
    for i in range(args.steps):
        batch = case.batches(i)
        exact, before = {}, {}
        if args.mode == "stepwise":
            if i > 0:
                sync(i)
            model64.load_state_dict(model.state_dict())
            opt64.load_state_dict(opt.state_dict())
            # The state before the step, for switch_points if needed.
            pre32, pre64 = copy.deepcopy(model), copy.deepcopy(model64)
            torch_step(model64, opt64, batch, torch.float64)
            exact = {k: v.detach().numpy() for k, v in list(state64.items())
                     + list(optimizer_slots(opt64, names64).items())}
            before = {k: v.detach().numpy().astype(np.float64)
                      for k, v in list(state.items())
                      + list(optimizer_slots(opt, param_names).items())}
        got = session.step(batch)
        ref = torch_step(model, opt, batch, None)
        ok = abs(got - ref) <= atol + rtol * abs(ref)
        print("%4d  %-12.7g  %-12.7g  %.2e%s" % (
            i, got, ref, abs(got - ref) / max(abs(ref), 1e-30),
            "" if ok else "  MISMATCH"))
        if not ok:
            failures.append("step %d: loss %.7g, torch %.7g" % (i, got, ref))
        if args.mode == "stepwise" or i == args.steps - 1:
            # The updated state, from the same state and batch.
            compared, off = {}, []
            for name, v in list(state.items()) + list(
                    optimizer_slots(opt, param_names).items()):
                if name not in session.state or name.endswith(
                        "num_batches_tracked"):
                    continue
                compared[name] = (session.read(name), v.detach().numpy())
                bad = compare("step %d %s" % (i, name), *compared[name],
                              exact.get(name), before.get(name), rtol, atol,
                              ref_factor, case.norm_rtol)
                if bad:
                    off.append(bad)
            if off and args.mode == "stepwise" and args.optimizer == "sgd":
                off = explain_by_flips(pre32, pre64, batch, i, compared,
                                       exact, before, off)
            for bad in off:
                failures.append(bad)
                print(bad)
            checked = len(compared)
            print("      state after step %d: %d tensors compared" % (i, checked))

    for f in failures[:20]:
        print("MISMATCH " + f)
    print("%s: %s" % (label, "PASS" if not failures else
                      "FAIL (%d mismatches)" % len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

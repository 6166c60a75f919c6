"""effopt: compile and train a PyTorch module with an exact memory plan.

    import effopt
    trainer = effopt.compile(model, example_inputs=(x, y), optimizer="adamw", lr=3e-4)
    loss = trainer.step(x, y)
    print(trainer.memory_report())

docs/Python.md describes the API.
"""
import os
import re
import tempfile

from . import _export, _lib
from ._export import ExportError
from ._lib import CompileError
from .report import MemoryReport
from .trainer import Trainer

__all__ = ["compile", "plan", "load", "Trainer", "MemoryReport", "ExportError",
           "CompileError"]

def _byte_count(value):
    """effc's byte counts: 2GiB and 2GB are 2G (binary units, as effc's)."""
    if isinstance(value, int):
        return str(value)
    text = str(value).strip()
    for suffix in ("iB", "B"):
        if text.endswith(suffix):
            return text[:-len(suffix)]
    return text


def _lora_spec(value):
    """effc's --lora value from lora=True, a spec string, or a dict of
    rank, alpha (or lora_alpha), dropout (or lora_dropout), seed, targets
    (a regex, or a list of names: peft's target_modules)."""
    if value is True:
        return "on"
    if isinstance(value, str):
        return value
    spec = dict(value)
    parts = []
    for key in ("rank", "r", "alpha", "lora_alpha", "dropout",
                "lora_dropout", "seed"):
        if spec.get(key) is not None:
            parts.append(f"{key}={spec.pop(key)!r}")
    targets = spec.pop("targets", spec.pop("target_modules", None))
    if spec:
        raise ValueError(f"lora: unknown keys {sorted(spec)}")
    if targets is not None:
        if not isinstance(targets, str):
            # peft's target_modules: module names; ours are weight names.
            targets = "|".join(r"(^|\.)" + re.escape(t) + r"\.weight$"
                               for t in targets)
        parts.append(f"targets={targets}")
    return ",".join(parts) or "on"


def _flags(options, frozen, shapes):
    """effc's flags from the keyword arguments: weight_decay=0.1 is
    --weight-decay 0.1, betas=(b1, b2) is --beta1 --beta2, Adafactor's
    eps=(eps1, eps2) is --eps1 --eps2 (eps1 None: the default) and d is
    --clip-threshold."""
    flags = []
    if options.get("optimizer") == "adafactor" and options.get("lr") is None:
        flags.append(("lr", "0.01"))  # torch.optim.Adafactor's default, as effc
    for key, value in options.items():
        if value is None:
            continue
        if key == "betas":
            b1, b2 = value
            flags += [("beta1", repr(float(b1))), ("beta2", repr(float(b2)))]
            continue
        if key == "eps" and isinstance(value, (tuple, list)):
            e1, e2 = value
            if e1 is not None:
                flags.append(("eps1", repr(float(e1))))
            flags.append(("eps2", repr(float(e2))))
            continue
        if key == "d":
            key = "clip_threshold"
        if key == "memory_budget":
            value = _byte_count(value)
        if key == "shape":
            for name, dims in dict(value).items():
                flags.append(("shape", f"{name}={','.join(map(str, dims))}"))
            continue
        if key == "lora":
            flags.append(("lora", _lora_spec(value)))
            continue
        name = key.replace("_", "-")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, float):
            value = repr(value)
        flags.append((name, str(value)))
    for name, dims in shapes.items():
        flags.append(("shape", f"{name}={','.join(map(str, dims))}"))
    regex = _export.freeze_regex(frozen)
    if regex:
        flags.append(("freeze", regex))
    return flags


def _tuple(x):
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def compile(model, example_inputs, loss_fn=None, example_targets=None,
            **options):
    """Exports `model` (with `loss_fn`, if given) and compiles its training
    step. `options` are effc's flags by name (optimizer, lr, weight_decay,
    betas, momentum, eps, schedule, warmup_steps, total_steps, remat,
    precision, accum, memory_budget, target, ...). Returns a Trainer."""
    workdir = tempfile.TemporaryDirectory(prefix="effopt-")
    onnx_path = os.path.join(workdir.name, type(model).__name__ + ".onnx")
    # A memory budget keeps the example batch as the global batch and may
    # split it into micro-batches: the batch dimension must be a symbol.
    split = options.get("memory_budget") is not None
    info = _export.export(model, _tuple(example_inputs),
                          _tuple(example_targets), loss_fn, onnx_path,
                          dynamic_batch=split)
    effx_path = os.path.join(workdir.name, "model.effx")
    prefix = os.path.join(workdir.name, "report")
    _lib.compile_onnx(onnx_path, effx_path, prefix, _flags(options, info.frozen, info.shapes))
    return Trainer(effx_path, prefix, info, workdir)


def plan(model, example_inputs, loss_fn=None, example_targets=None,
         **options):
    """The memory report of the step effopt.compile would build, without
    generating code or reading a weight: the model is traced on the meta
    device (build it there, device="meta", when it does not fit)."""
    with tempfile.TemporaryDirectory(prefix="effopt-plan-") as d:
        onnx_path = os.path.join(d, type(model).__name__ + ".onnx")
        info = _export.export(model, _tuple(example_inputs),
                              _tuple(example_targets), loss_fn, onnx_path,
                              plan=True,
                              dynamic_batch=options.get("memory_budget") is not None)
        prefix = os.path.join(d, "report")
        _lib.compile_onnx(onnx_path, None, prefix, _flags(options, info.frozen, info.shapes))
        return MemoryReport(prefix)


def load(effx_path):
    """A Trainer over an .effx compiled by effc (state under the ONNX
    initializer names; no memory report)."""
    info = _export.ExportInfo()
    return Trainer(os.path.abspath(effx_path), None, info, None)


def set_num_threads(threads):
    """Threads of the compiled loops and the BLAS for this process (effrun
    --threads)."""
    if _lib.runtime().effrt_set_num_threads(int(threads)) != 0:
        raise _lib.runtime_error("set_num_threads")

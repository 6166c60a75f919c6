"""Trainer: one compiled training step driven through libeffrt's C ABI."""
import collections
import ctypes
import json
import sys
import time

import numpy as np
import torch

from . import _lib
from .report import MemoryReport

_NUMPY_DTYPES = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16,
    "bfloat16": np.uint16,  # read and written as raw bits
    "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
    "uint8": np.uint8, "bool": np.bool_,
}


def _dtype_name(arr):
    return "bool" if arr.dtype == np.bool_ else str(arr.dtype)


def _to_numpy(value, name):
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype == torch.bfloat16:
            raise ValueError(f"input '{name}': bfloat16 inputs are not supported")
        return t.numpy()
    if isinstance(value, np.ndarray):
        return value
    raise ValueError(f"input '{name}': expected a torch.Tensor or numpy array, "
                     f"got {type(value).__name__}")


class Trainer:
    """A compiled training step with its state (parameters, optimizer state,
    buffers) in the runtime. Made by effopt.compile."""

    def __init__(self, effx_path, report_prefix, info, workdir):
        self._rt = _lib.runtime()
        self._session = self._rt.effrt_session_open(effx_path.encode())
        if not self._session:
            raise _lib.runtime_error(f"cannot open {effx_path}")
        self._workdir = workdir  # keeps the .effx and report files alive
        self.effx_path = effx_path
        self._report = MemoryReport(report_prefix) if report_prefix else None
        self._info = info
        self.manifest = json.loads(self._rt.effrt_session_manifest(self._session))
        self._inputs = [(i["name"], i["dtype"], tuple(i["shape"]))
                        for i in self.manifest["inputs"]]
        self._state = {s["name"]: s for s in self.manifest["state"]}
        self._names = [n for n, _, _ in self._inputs]
        self._loss = ctypes.c_float()

    # -- stepping ---------------------------------------------------------
    @property
    def input_names(self):
        return list(self._names)

    def step(self, *batch):
        """Runs one training step on `batch` (the example inputs, then the
        targets); returns the loss of its forward pass, before the update."""
        if len(batch) != len(self._inputs):
            raise ValueError(
                f"step() takes {len(self._inputs)} inputs "
                f"({', '.join(self._names)}), got {len(batch)}")
        arrays = []
        for value, (name, dtype, shape) in zip(batch, self._inputs):
            arr = _to_numpy(value, name)
            if _dtype_name(arr) != dtype:
                raise ValueError(f"input '{name}': dtype {_dtype_name(arr)}, "
                                 f"compiled for {dtype}")
            if arr.shape != shape:
                raise ValueError(f"input '{name}': shape {list(arr.shape)}, "
                                 f"compiled for {list(shape)}")
            if not arr.flags.c_contiguous:
                arr = np.ascontiguousarray(arr)
            arrays.append(arr)
        rt, s = self._rt, self._session
        for arr, (name, _, _) in zip(arrays, self._inputs):
            # The one copy: from the caller's buffer into the io region.
            if rt.effrt_session_set_input(s, name.encode(), arr.ctypes.data,
                                          arr.nbytes) != 0:
                raise _lib.runtime_error(f"input '{name}'")
        # ctypes releases the GIL while the step runs.
        if rt.effrt_session_step(s, ctypes.byref(self._loss)) != 0:
            raise _lib.runtime_error("step")
        return float(self._loss.value)

    def fit(self, batches, steps=None, progress=True, log_every=10):
        """Runs a step per batch (a tuple of inputs and targets) of the
        iterable `batches`, at most `steps` steps; returns the losses."""
        total = steps
        if total is None:
            try:
                total = len(batches)
            except TypeError:
                total = None
        bar = None
        if progress:
            try:
                from tqdm import tqdm
                bar = tqdm(total=total, unit="step")
            except ImportError:
                bar = None
        losses = []
        start = time.perf_counter()
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            if not isinstance(batch, (tuple, list)):
                batch = (batch,)
            losses.append(self.step(*batch))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.4f}")
            elif progress and ((i + 1) % log_every == 0 or i + 1 == total):
                ms = (time.perf_counter() - start) * 1000 / (i + 1)
                print(f"step {i} loss {losses[-1]:.4f} {ms:.2f} ms/step",
                      file=sys.stderr, flush=True)
        if bar is not None:
            bar.close()
        return losses

    # -- memory -----------------------------------------------------------
    def memory_report(self):
        """The exact memory plan of the compiled step (MemoryReport)."""
        if self._report is None:
            raise RuntimeError("no memory report: this trainer was opened "
                               "from an .effx (effc --report prints it)")
        return self._report

    def allocated_bytes(self):
        """Bytes the runtime allocated: state + arena + io."""
        return int(self._rt.effrt_session_allocated_bytes(
            self._session, None, None, None))

    @property
    def global_step(self):
        return int(self._rt.effrt_session_step_counter(self._session))

    # -- state ------------------------------------------------------------
    def _read(self, name):
        entry = self._state[name]
        arr = np.empty(entry["shape"], dtype=_NUMPY_DTYPES[entry["dtype"]])
        if self._rt.effrt_session_read_state(self._session, name.encode(),
                                             arr.ctypes.data, arr.nbytes) != 0:
            raise _lib.runtime_error(f"state '{name}'")
        t = torch.from_numpy(arr)
        if entry["dtype"] == "bfloat16":
            t = t.view(torch.bfloat16)
        return t

    def _write(self, name, value):
        entry = self._state[name]
        t = torch.as_tensor(value).detach().cpu()
        if list(t.shape) != list(entry["shape"]):
            raise ValueError(f"state '{name}': shape {list(t.shape)}, compiled "
                             f"for {list(entry['shape'])}")
        if entry["dtype"] == "bfloat16":
            arr = t.to(torch.bfloat16).contiguous().view(torch.int16).numpy()
        else:
            arr = np.ascontiguousarray(
                t.numpy().astype(_NUMPY_DTYPES[entry["dtype"]], copy=False))
        if self._rt.effrt_session_write_state(self._session, name.encode(),
                                              arr.ctypes.data, arr.nbytes) != 0:
            raise _lib.runtime_error(f"state '{name}'")

    def state_dict(self):
        """Torch tensors (copies) under the module's own names (tied
        parameters under each of their names), then the optimizer state and
        step counter under their checkpoint names."""
        out = collections.OrderedDict()
        values = {name: self._read(name) for name in self._state}
        for name, owner in self._info.aliases.items():
            if owner in values:
                out[name] = values[owner]
        for name, value in values.items():
            if name not in out:
                out[name] = value
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Writes the entries of `state_dict` (as state_dict() returns them)
        into the trainer. strict: every state entry must be given and every
        key must be one."""
        written = set()
        unknown = []
        for name, value in state_dict.items():
            owner = self._info.aliases.get(name, name)
            if owner not in self._state:
                unknown.append(name)
                continue
            if owner not in written:
                self._write(owner, value)
                written.add(owner)
        if strict:
            missing = sorted(set(self._state) - written)
            if missing or unknown:
                raise KeyError(f"load_state_dict: missing {missing}, "
                               f"unexpected {unknown}")

    def save(self, path):
        """Writes a safetensors checkpoint, the one effrun writes and
        resumes (parameters under the ONNX initializer names, optimizer
        state, step)."""
        if self._rt.effrt_session_save(self._session, str(path).encode()) != 0:
            raise _lib.runtime_error(f"save {path}")

    def save_merged_lora(self, path):
        """Writes the weights with the LoRA adapters merged, W + alpha/r *
        B A under the original names (no adapters, no optimizer state), as
        effrun --merge-lora does: a model compiled with lora=..."""
        if self._rt.effrt_session_save_merged_lora(
                self._session, str(path).encode()) != 0:
            raise _lib.runtime_error(f"save_merged_lora {path}")

    def load(self, path):
        """Restores a checkpoint written by save() or effrun --save."""
        if self._rt.effrt_session_load(self._session, str(path).encode()) != 0:
            raise _lib.runtime_error(f"load {path}")

    def copy_to(self, model):
        """Copies the trained parameters and buffers into `model`."""
        with torch.no_grad():
            for name, t in model.state_dict(keep_vars=True).items():
                owner = self._info.aliases.get(name)
                if owner in self._state:
                    t.copy_(self._read(owner).to(t.dtype))

    def close(self):
        if getattr(self, "_session", None):
            self._rt.effrt_session_close(self._session)
            self._session = None

    def __del__(self):
        self.close()

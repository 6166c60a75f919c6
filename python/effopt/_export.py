"""PyTorch module -> the ONNX training graph effc compiles.

The contract (docs/UserGuide.md): training-mode export, opset 17, no
constant folding, the scalar loss as output 0, initializers named as the
module's state_dict. What the ONNX file cannot say, the module can: its
registered buffers and its parameters with requires_grad=False are frozen
(effc --freeze with an anchored regex of their names).
"""
import contextlib
import gc
import inspect
import io
import os
import re
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

OPSET = 17


class ExportError(RuntimeError):
    """torch.onnx.export could not export the model (one line)."""


class ExportInfo:
    def __init__(self):
        self.input_names = []     # graph inputs, in step() order
        self.initializers = []    # float initializer names (the state)
        self.aliases = {}         # state_dict name -> initializer name
        self.frozen = []          # initializer names effc freezes
        self.shapes = {}          # input -> shape, for a dynamic batch


def as_tensor(value, what):
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return torch.from_numpy(np.asarray(value))
    raise TypeError(f"{what}: expected a torch.Tensor or numpy array, got "
                    f"{type(value).__name__}")


def input_names(model, n_inputs, n_targets):
    """Graph input names: the forward's parameter names where it has them."""
    names = []
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params[:n_inputs]]
    except (TypeError, ValueError):
        pass
    while len(names) < n_inputs:
        names.append(f"input{len(names)}")
    targets = ["target" if n_targets == 1 else f"target{i}"
               for i in range(n_targets)]
    out = []
    for n in names + targets:
        while n in out:
            n += "_"
        out.append(n)
    return out


class _WithLoss(nn.Module):
    """The model with its loss as the only output, under the model's own
    parameter and buffer names (it shares the model's dicts)."""

    def __init__(self, model, loss_fn, n_inputs):
        super().__init__()
        object.__setattr__(self, "_modules", model._modules)
        object.__setattr__(self, "_parameters", model._parameters)
        object.__setattr__(self, "_buffers", model._buffers)
        object.__setattr__(self, "_effopt_model", model)
        self._loss_fn = loss_fn
        self._n = n_inputs

    def forward(self, *args):
        out = self._effopt_model(*args[:self._n])
        if self._loss_fn is not None:
            return self._loss_fn(out, *args[self._n:])
        if isinstance(out, (tuple, list)):
            out = out[0]
        if isinstance(out, dict):
            out = out["loss"]
        if not isinstance(out, torch.Tensor) or out.numel() != 1:
            raise ExportError("the model must return the loss (a scalar, or a "
                              "tuple with the loss first) when no loss_fn is "
                              "given")
        return out.reshape(())


@contextlib.contextmanager
def _module_tracker(model):
    """Records the module path being run, to name it when export fails."""
    stack = []
    names = {m: n for n, m in model.named_modules()}
    handles = []
    for m in model.modules():
        def pre(mod, _args):
            stack.append(names.get(mod, type(mod).__name__))
        def post(mod, _args, _out):
            if stack:
                stack.pop()
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    try:
        yield stack
    finally:
        for h in handles:
            h.remove()


def _module_of_op(wrapper, model, args, message):
    """The module path running the op an export failure names ('aten::X'),
    from a trace that records module scopes (as the exporter's own does)."""
    match = re.search(r"'(aten::[A-Za-z0-9_.]+)'", message)
    if not match:
        return None
    names = {m: n for n, m in model.named_modules()}
    trace_map = {m: "effopt::" + names.get(m, "") for m in wrapper.modules()}
    trace_map.update({m: "effopt::" + n for m, n in names.items()})
    previous = torch.jit._trace._trace_module_map
    torch.jit._trace._trace_module_map = trace_map
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph, _ = torch.jit._get_trace_graph(wrapper, args)
        for node in graph.nodes():
            if node.kind() == match.group(1):
                scope = node.scopeName().split("effopt::")[-1]
                return scope or None
    except Exception:
        return None
    finally:
        torch.jit._trace._trace_module_map = previous
    return None


def _first_line(e):
    text = str(e).strip() or type(e).__name__
    for line in text.splitlines():
        if line.strip():
            # torch's "... is not supported. Please feel free to request..."
            return line.strip().split(" Please feel free")[0]
    return text


@contextlib.contextmanager
def _no_initializer_deduplication():
    """The exporter merges parameters with equal values; meta tensors have
    none, so every one would look equal to every other of its shape."""
    name = "_jit_pass_onnx_deduplicate_initializers"
    original = getattr(torch._C, name, None)
    if original is None:
        yield
        return
    setattr(torch._C, name, lambda graph, params, training: params)
    try:
        yield
    finally:
        setattr(torch._C, name, original)


@contextlib.contextmanager
def _on_meta(model):
    """Swaps every parameter and buffer for a meta tensor of its shape (same
    Parameter objects per tie), restoring them afterwards."""
    saved = []
    meta = {}
    for mod in model.modules():
        for table in (mod._parameters, mod._buffers):
            for k, v in list(table.items()):
                if v is None:
                    continue
                if id(v) not in meta:
                    t = torch.empty(v.shape, dtype=v.dtype, device="meta")
                    meta[id(v)] = (nn.Parameter(t, v.requires_grad)
                                   if isinstance(v, nn.Parameter) else t)
                saved.append((table, k, v))
                table[k] = meta[id(v)]
    try:
        yield
    finally:
        for table, k, v in saved:
            table[k] = v


def _alias_map(model, initializer_names):
    """state_dict name -> the initializer that holds it (tied parameters are
    one initializer under one of their names)."""
    by_id = {}
    for name, t in model.state_dict(keep_vars=True).items():
        by_id.setdefault(id(t), []).append(name)
    aliases = {}
    for names in by_id.values():
        owner = next((n for n in names if n in initializer_names), None)
        if owner is not None:
            for n in names:
                aliases[n] = owner
    return aliases


def _frozen_names(model, aliases):
    frozen = set()
    for name, b in model.named_buffers():
        if b is not None and b.is_floating_point() and name in aliases:
            frozen.add(aliases[name])
    trainable = set()
    for name, p in model.state_dict(keep_vars=True).items():
        if isinstance(p, nn.Parameter) and name in aliases:
            (trainable if p.requires_grad else frozen).add(aliases[name])
    return sorted(frozen - trainable)


def freeze_regex(names):
    if not names:
        return None
    return "^(" + "|".join(re.sub(r"([^A-Za-z0-9_])", r"\\\1", n)
                           for n in names) + ")$"


def export(model, inputs, targets, loss_fn, path, plan=False,
           dynamic_batch=False):
    """Writes the training graph to `path`; returns an ExportInfo. With
    plan=True no weight is read or written: the model is traced on the meta
    device and its initializers point at a sparse external data file. With
    dynamic_batch=True the inputs' leading dimension is the symbol "batch"
    (info.shapes holds the example's shapes for effc --shape), so a memory
    budget can split the batch into micro-batches."""
    inputs = tuple(as_tensor(x, f"example_inputs[{i}]") for i, x in enumerate(inputs))
    targets = tuple(as_tensor(x, f"example_targets[{i}]") for i, x in enumerate(targets))
    info = ExportInfo()
    info.input_names = input_names(model, len(inputs), len(targets))
    dynamic_axes = None
    if dynamic_batch:
        dynamic_axes = {n: {0: "batch"} for n, a in
                        zip(info.input_names, inputs + targets) if a.dim() > 0}
        info.shapes = {n: list(a.shape) for n, a in
                       zip(info.input_names, inputs + targets)
                       if n in dynamic_axes}
    wrapper = _WithLoss(model, loss_fn, len(inputs))
    args = inputs + targets
    was_training = model.training
    model.train()
    state = None if plan else {k: v.detach().clone()
                               for k, v in model.state_dict().items()}
    f = io.BytesIO()
    failure = None
    failed_tracing = False
    try:
        with _module_tracker(model) as stack, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                if plan:
                    with _on_meta(model), _no_initializer_deduplication(), \
                            torch.no_grad():
                        meta_args = tuple(a.to("meta") for a in args)
                        # Meta tensors have no data for the exporter's own
                        # shape inference: effc runs ONNX's instead.
                        torch.onnx.utils._export(
                            wrapper, meta_args, f, export_params=False,
                            training=torch.onnx.TrainingMode.TRAINING,
                            do_constant_folding=False, opset_version=OPSET,
                            input_names=info.input_names, output_names=["loss"],
                            dynamic_axes=dynamic_axes, onnx_shape_inference=False)
                else:
                    torch.onnx.export(
                        wrapper, args, f,
                        training=torch.onnx.TrainingMode.TRAINING,
                        do_constant_folding=False, opset_version=OPSET,
                        input_names=info.input_names, output_names=["loss"],
                        dynamic_axes=dynamic_axes)
            except ExportError:
                raise
            except Exception as e:  # torch's, of any kind: one line
                failure = _first_line(e)
                where = stack[-1] if stack and stack[-1] else None
                failed_tracing = bool(stack)
        if failure and not failed_tracing and not plan:
            # The exporter failed converting the trace: find the module.
            where = _module_of_op(wrapper, model, args, failure)
        if failure:
            where = f" in module '{where}'" if where else ""
            failure = f"cannot export {type(model).__name__}{where}: {failure}"
    finally:
        if state is not None:
            model.load_state_dict(state)
        model.train(was_training)
    if failure:
        # Raised here, not in the handler: torch's exception (and the
        # frames holding the exporter's graphs) must not stay alive as this
        # one's context. A TorchScript graph freed under a live Python
        # wrapper makes the next export fail in pybind11 ("Unable to cast
        # from non-held to held instance").
        gc.collect()
        raise ExportError(failure)

    m = onnx.load_from_string(f.getvalue())
    if plan:
        _externalize_inputs(m, set(info.input_names), path)
    else:
        for t in m.graph.initializer:
            if t.name in state:
                t.CopyFrom(onnx.numpy_helper.from_array(
                    np.ascontiguousarray(state[t.name].numpy()), t.name))
    info.initializers = [t.name for t in m.graph.initializer
                         if t.data_type in (onnx.TensorProto.FLOAT,
                                            onnx.TensorProto.DOUBLE,
                                            onnx.TensorProto.FLOAT16,
                                            onnx.TensorProto.BFLOAT16)]
    info.aliases = _alias_map(model, set(t.name for t in m.graph.initializer))
    info.frozen = _frozen_names(model, info.aliases)
    onnx.save_model(m, path)
    return info


def _externalize_inputs(m, batch_inputs, path):
    """The parameters an export_params=False graph takes as inputs become
    initializers whose data is a sparse file: its size is the weights', its
    blocks are never written."""
    data_name = os.path.basename(path) + ".weights"
    offset = 0
    keep = []
    for vi in m.graph.input:
        if vi.name in batch_inputs:
            keep.append(vi)
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value for d in tt.shape.dim]
        t = m.graph.initializer.add()
        t.name = vi.name
        t.data_type = tt.elem_type
        t.dims.extend(dims)
        nbytes = int(np.prod(dims, dtype=np.int64)) * \
            np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tt.elem_type]).itemsize
        t.data_location = onnx.TensorProto.EXTERNAL
        for k, v in (("location", data_name), ("offset", str(offset)),
                     ("length", str(nbytes))):
            e = t.external_data.add()
            e.key, e.value = k, v
        offset += (nbytes + 63) // 64 * 64
    del m.graph.input[:]
    m.graph.input.extend(keep)
    with open(os.path.join(os.path.dirname(path), data_name), "wb") as w:
        w.truncate(max(offset, 1))

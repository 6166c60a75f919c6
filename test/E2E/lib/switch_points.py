"""The gradient changes a float32 run may make when a ReLU-like input sits
within rounding of its switch point.

ReLU, ReLU6, Hardtanh, LeakyReLU, Hardswish and Hardsigmoid have a
derivative that jumps at fixed inputs (0, 6, +-3). When an input lies
within rounding of such a point, two correct float32 implementations can
put it on different sides: the forward value barely moves (the function is
continuous there) but the backward passes dL/dy times one slope in one and
the other slope in the other, and everything upstream follows. That is a
discontinuity, not a bug. For a fixed forward pass the backward is linear
in what each element passes, so a run that flips element i moves the
gradient by exactly J_i^T (jump_i * g_i e_i) (J_i: the Jacobian of that
input with respect to the parameters, g_i: dL/dy there), a vector over
every parameter upstream, and flips add.

An element is a candidate when float64 puts it within `ref_factor` times
PyTorch float32's largest error at that layer of the switch point: the same
allowance the stepwise comparison grants every tensor. zoo_vs_torch.py
explains a mismatch by the few flips that account for it across all
tensors at once (a wrong gradient does not look like one); functional
calls (F.relu in a forward) are not modules and are not seen.
"""
import copy

import numpy as np
import torch


def switch_points(module):
    """[(input where the derivative jumps, slope right of it minus slope
    left of it)] or []."""
    if isinstance(module, torch.nn.Hardtanh):  # ReLU6 too
        return [(module.min_val, 1.0), (module.max_val, -1.0)]
    if isinstance(module, torch.nn.ReLU):
        return [(0.0, 1.0)]
    if isinstance(module, torch.nn.LeakyReLU):
        return [(0.0, 1.0 - module.negative_slope)]
    if isinstance(module, torch.nn.Hardswish):
        # x (x + 3) / 6 between -3 and 3: slope -1/2 and 3/2 at the ends,
        # 0 left of -3 and 1 right of 3.
        return [(-3.0, -0.5), (3.0, -0.5)]
    if isinstance(module, torch.nn.Hardsigmoid):
        return [(-3.0, 1.0 / 6.0), (3.0, -1.0 / 6.0)]
    return []


def _record(model):
    """Hooks that record (input, output, switch points, module) of every
    call of a switch module, in call order; in-place variants made
    out-of-place so the input stays in the autograd graph."""
    calls = []
    for module in model.modules():
        points = switch_points(module)
        if not points:
            continue
        if getattr(module, "inplace", False):
            module.inplace = False

        def hook(mod, inputs, output, points=points):
            calls.append((inputs[0], output, points, mod))
        module.register_forward_hook(hook)
    return calls


def _loss_of(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def flip_candidates(model32, model64, inputs32, inputs64, ref_factor,
                    max_values=25_000_000):
    """([(label, {parameter name: float32 gradient change})], count) for
    the elements a float32 run may put on the other side of a switch point
    than float64 does; the list is None when they would hold more than
    `max_values` numbers (one backward each, one value per parameter).
    model32 and model64 hold the state before the step; neither is
    modified."""
    m32, m64 = copy.deepcopy(model32), copy.deepcopy(model64)
    calls32 = _record(m32)
    calls64 = _record(m64)
    with torch.no_grad():
        m32(*inputs32)
    loss = _loss_of(m64(*inputs64))
    if len(calls32) != len(calls64):
        raise SystemExit("switch points: float32 and float64 forwards made "
                         "%d and %d calls" % (len(calls32), len(calls64)))
    if not calls64:
        return [], 0
    module_names = {id(m): n for n, m in m64.named_modules()}
    params = {name: p for name, p in m64.named_parameters() if p.requires_grad}
    outputs = [out for _, out, _, _ in calls64]
    grads_out = torch.autograd.grad(loss, outputs, retain_graph=True,
                                    allow_unused=True)
    found = []
    for (x32, _, _, _), (x64, _, points, module), g_out in zip(
            calls32, calls64, grads_out):
        if g_out is None:
            continue
        x = x64.detach()
        band = ref_factor * (x32.double() - x).abs().max()
        for edge, jump in points:
            for index in torch.nonzero((x - edge).abs() <= band).tolist():
                index = tuple(index)
                # Leaving the side float64 took: the slope of the other side
                # minus this side's.
                change = -jump if x[index] >= edge else jump
                found.append(("%s%s at %.3g" % (
                    module_names.get(id(module), "?"), list(index),
                    float(x[index])), x64, index, change * g_out[index]))
    if len(found) * sum(p.numel() for p in params.values()) > max_values:
        return None, len(found)
    names = list(params)
    candidates = []
    for label, x64, index, passed in found:
        seed = torch.zeros_like(x64)
        seed[index] = passed
        grads = torch.autograd.grad(x64, [params[n] for n in names], seed,
                                    retain_graph=True, allow_unused=True)
        candidates.append((label, {n: g.detach().float().numpy() for n, g
                                   in zip(names, grads) if g is not None}))
    return candidates, len(found)


def sgd_update_changes(grad_change, lr):
    """{state name: change} for plain or momentum SGD: the parameter moves
    by -lr times the gradient's change and the momentum buffer by the change
    itself (buffer = momentum * buffer + gradient)."""
    out = {}
    for name, g in grad_change.items():
        out[name] = -lr * g
        out["optimizer.%s.momentum_buffer" % name] = g
    return out


def explain(candidates, residual, weight):
    """Greedy: the candidates (by index) whose changes, subtracted from
    `residual` ({state name: array}), most reduce sum(weight * r)^2; each
    is taken once, and only while it reduces it."""
    chosen, r = [], {k: v.copy() for k, v in residual.items()}
    while True:
        best, best_gain = None, 0.0
        for i, (_, change) in enumerate(candidates):
            if i in chosen:
                continue
            gain = 0.0
            for k, d in change.items():
                if k in r:
                    w2 = weight[k] ** 2
                    gain += float(np.sum(w2 * (2 * r[k] * d - d * d)))
            if gain > best_gain:
                best, best_gain = i, gain
        if best is None:
            return chosen, r
        chosen.append(best)
        for k, d in candidates[best][1].items():
            if k in r:
                r[k] -= d

#!/usr/bin/env python3
"""Writes a wide MLP training graph and its data, for memory tests:

  x float32 [B,D] -> Gemm(D,H) -> Relu -> Gemm(H,H) -> Relu -> Gemm(H,C)
  -> SoftmaxCrossEntropyLoss(y int64 [B])

Weights are torch.nn.Linear-style uniform(+-1/sqrt(fan_in)) from a fixed
seed, stored as (out, in) with transB=1 as torch exports them.

Usage: make_wide_mlp.py OUT.onnx OUT.npz [--batch B] [--dim D] [--hidden H]
                        [--classes C] [--rows N]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("onnx")
ap.add_argument("npz")
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--dim", type=int, default=1024)
ap.add_argument("--hidden", type=int, default=2048)
ap.add_argument("--classes", type=int, default=1024)
ap.add_argument("--rows", type=int, default=64)
a = ap.parse_args()
rng = np.random.default_rng(7)


def linear(name, fan_in, fan_out):
    bound = 1 / np.sqrt(fan_in)
    w = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
    b = rng.uniform(-bound, bound, (fan_out,)).astype(np.float32)
    return [numpy_helper.from_array(w, name + ".weight"),
            numpy_helper.from_array(b, name + ".bias")]


inits = (linear("fc1", a.dim, a.hidden) + linear("fc2", a.hidden, a.hidden) +
         linear("fc3", a.hidden, a.classes))
nodes = [
    helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h1"], transB=1),
    helper.make_node("Relu", ["h1"], ["r1"]),
    helper.make_node("Gemm", ["r1", "fc2.weight", "fc2.bias"], ["h2"], transB=1),
    helper.make_node("Relu", ["h2"], ["r2"]),
    helper.make_node("Gemm", ["r2", "fc3.weight", "fc3.bias"], ["logits"],
                     transB=1),
    helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "y"], ["loss"],
                     reduction="mean"),
]
graph = helper.make_graph(
    nodes, "wide_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [a.batch, a.dim]),
     helper.make_tensor_value_info("y", TensorProto.INT64, [a.batch])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, a.onnx)
x = rng.standard_normal((a.rows, a.dim)).astype(np.float32)
y = rng.integers(0, a.classes, (a.rows,)).astype(np.int64)
np.savez(a.npz, x=x, y=y)

#!/usr/bin/env python3
"""Writes the forward test model of effrt-capi-test (CApiTest.c):

  inputs  x float32 [2,3]; initializer c float32 [3] = [0.5, -1, 2]
  outputs y = x + c (float32 [2,3]), g = x > c (bool [2,3]),
          n = argmax(x, axis=1) (int64 [2])

Usage: make_forward_model.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

c = numpy_helper.from_array(np.array([0.5, -1.0, 2.0], np.float32), "c")
graph = helper.make_graph(
    [helper.make_node("Add", ["x", "c"], ["y"]),
     helper.make_node("Greater", ["x", "c"], ["g"]),
     helper.make_node("ArgMax", ["x"], ["n"], axis=1, keepdims=0)],
    "forward_test",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("g", TensorProto.BOOL, [2, 3]),
     helper.make_tensor_value_info("n", TensorProto.INT64, [2])],
    [c])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])

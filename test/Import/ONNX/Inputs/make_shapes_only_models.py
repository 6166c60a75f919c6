#!/usr/bin/python3
"""Models whose external data file is absent, for shapes-only.test.

    make_shapes_only_models.py OUTDIR

Writes, without any data file (only the references to one):
  OUTDIR/float_weights.onnx  an embedding + linear net whose float
      initializers ('tok.weight' [16,8], 'fc.weight' [4,8]) are external data
      in 'float_weights.data'; the int64 initializer 'ids.offset' is inline.
  OUTDIR/int_external.onnx   the same, but 'ids.offset' is external data in
      'int_external.data' too: without the file its values are unknown.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper


def externalize(tensor, location, offset):
    """Points `tensor` at `location` (which is not written) and drops its
    data; returns the next offset."""
    nbytes = len(tensor.raw_data)
    tensor.ClearField("raw_data")
    tensor.data_location = TP.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(nbytes))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return offset + nbytes


def model(name, int_external):
    rng = np.random.RandomState(0)
    tok = numpy_helper.from_array(rng.randn(16, 8).astype(np.float32), "tok.weight")
    fc = numpy_helper.from_array(rng.randn(4, 8).astype(np.float32), "fc.weight")
    offset = numpy_helper.from_array(np.array([1, 2, 3], dtype=np.int64), "ids.offset")
    data = name + ".data"
    at = externalize(tok, data, 0)
    at = externalize(fc, data, at)
    if int_external:
        externalize(offset, data, at)
    nodes = [
        helper.make_node("Add", ["ids", "ids.offset"], ["shifted"], name="/shift/Add"),
        helper.make_node("Gather", ["tok.weight", "shifted"], ["emb"], name="/tok/Gather"),
        helper.make_node("Gemm", ["emb", "fc.weight"], ["logits"], name="/fc/Gemm", transB=1),
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"],
                         name="/loss/SoftmaxCrossEntropyLoss"),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("ids", TP.INT64, [3]),
         helper.make_tensor_value_info("labels", TP.INT64, [3])],
        [helper.make_tensor_value_info("loss", TP.FLOAT, [])],
        [tok, fc, offset])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, int_external in (("float_weights", False), ("int_external", True)):
        onnx.save_model(model(name, int_external), os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Build ONNX models that pass ONNX's checker but that effopt must reject.

Usage:
    /usr/bin/python3 test/Import/ONNX/Inputs/make_malformed_models.py [OUTDIR]

OUTDIR defaults to the `malformed/` folder next to this script. Each model
once crashed or aborted the importer (found by the libFuzzer target
`effopt-import-fuzzer` or by probing converters with hostile attributes and
shapes); now each must give a one-line error and exit status 1.
`malformed.test` checks the errors; `fuzz.test` seeds the fuzzer with them.

Every model passes `onnx.checker.check_model` (the check the importer runs),
not necessarily shape inference: that is the point. Deterministic. Needs
Debian's python3-onnx (1.12) and numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper as nh

F, I64 = TP.FLOAT, TP.INT64
IR_VERSION = 8
MODELS = {}


def model(fn):
    MODELS[fn.__name__] = fn
    return fn


def make(name, nodes, inputs, outputs, inits=(), opset=17):
    graph = oh.make_graph(
        nodes, name, [oh.make_tensor_value_info(*i) for i in inputs],
        [oh.make_tensor_value_info(*o) for o in outputs],
        initializer=list(inits))
    return oh.make_model(graph, producer_name="effopt-make_malformed_models",
                         opset_imports=[oh.make_opsetid("", opset)],
                         ir_version=IR_VERSION)


def const(name, array):
    return oh.make_node("Constant", [], [name], name=name,
                        value=nh.from_array(np.array(array), name))


# eff's builders inferred result types and aborted (report_fatal_error) when
# they could not: operands ONNX's checker does not relate.

@model
def sub_not_broadcastable():
    """Sub of [2, 3] and [4]: eff.sub infers no result type."""
    return make("sub_not_broadcastable",
                [oh.make_node("Sub", ["a", "b"], ["y"], name="bad_sub")],
                [("a", F, [2, 3]), ("b", F, [4])], [("y", F, [2, 3])])


@model
def where_float_condition():
    """Where with a float condition: eff.where wants i1 (ONNX's checker does
    not check types)."""
    return make("where_float_condition",
                [oh.make_node("Where", ["c", "a", "b"], ["y"],
                              name="bad_where")],
                [("c", F, [4]), ("a", F, [4]), ("b", F, [4])],
                [("y", F, [4])])


@model
def transpose_not_a_permutation():
    """Transpose with perm [0, 0]: eff.transpose infers no result type."""
    return make("transpose_not_a_permutation",
                [oh.make_node("Transpose", ["x"], ["y"], name="bad_transpose",
                              perm=[0, 0])],
                [("x", F, [2, 3])], [("y", F, [2, 3])])


@model
def expand_negative_dim():
    """Expand to [-3, 4]: a result type with a negative dimension."""
    return make("expand_negative_dim",
                [const("shape", np.array([-3, 4], np.int64)),
                 oh.make_node("Expand", ["x", "shape"], ["y"],
                              name="bad_expand")],
                [("x", F, [1, 4])], [("y", F, ["n", 4])])


@model
def tile_too_large():
    """Tile by 2^40 twice: 2^80 elements overflow every count."""
    return make("tile_too_large",
                [const("repeats", np.array([2 ** 40, 2 ** 40], np.int64)),
                 oh.make_node("Tile", ["x", "repeats"], ["y"],
                              name="bad_tile")],
                [("x", F, [2, 2])], [("y", F, ["m", "n"])])


# libonnx (version converter, shape inference) crashed on what its checker
# lets through (found by the fuzzer).

@model
def graph_output_undefined():
    """No node produces the graph output; at opset 11 the version converter
    dereferenced the missing producer (SIGSEGV in graphProtoToGraph)."""
    return make("graph_output_undefined",
                [oh.make_node("Relu", ["x"], ["y"], name="relu")],
                [("x", F, [2, 3])], [("loss", F, [2, 3])], opset=11)


@model
def average_pool_zero_stride():
    """AveragePool with strides [0, 2]: ONNX's pooling shape inference
    divides by the stride (SIGFPE)."""
    return make("average_pool_zero_stride",
                [oh.make_node("AveragePool", ["x"], ["y"], name="bad_pool",
                              kernel_shape=[3, 3], strides=[0, 2])],
                [("x", F, [1, 2, 8, 8])], [("y", F, [1, 2, 3, 3])])


@model
def one_hot_huge_depth():
    """OneHot with depth 4.5e15 (a float): its positions constant would not
    fit in memory (out of memory)."""
    return make("one_hot_huge_depth",
                [const("depth", np.array(4503599627370500.0, np.float32)),
                 const("values", np.array([0.0, 1.0], np.float32)),
                 oh.make_node("OneHot", ["indices", "depth", "values"], ["y"],
                              name="bad_one_hot")],
                [("indices", I64, [3])], [("y", F, [3, 4])])


@model
def conv_transpose_weight_rank():
    """ConvTranspose (opset 12) whose weight, computed by a Reshape, has rank
    1: ONNX's ConvTranspose shape inference, which the version converter
    needs first, reads its dimension 1 (SIGSEGV)."""
    return make("conv_transpose_weight_rank",
                [const("shape", np.array([4], np.int64)),
                 oh.make_node("Reshape", ["w0", "shape"], ["w"],
                              name="weight_reshape"),
                 oh.make_node("ConvTranspose", ["x", "w"], ["y"],
                              name="bad_conv_transpose")],
                [("x", F, [1, 1, 3, 3]), ("w0", F, [2, 2])],
                [("y", F, ["n", "c", "h", "w"])], opset=12)


# Converters read dimensions and constants their operands lack (found by
# probing converters with hostile shapes).

@model
def concat_empty_input():
    """Concat with an empty ("") variadic input, which the checker allows:
    the converter read the type of a missing value (SIGSEGV)."""
    return make("concat_empty_input",
                [oh.make_node("Concat", ["", "x"], ["y"], name="bad_concat",
                              axis=0)],
                [("x", F, [3])], [("y", F, [3])])


@model
def concat_mixed_ranks():
    """Concat of ranks 2 and 1 along axis 1: dimension 1 of the rank-1
    input was read."""
    return make("concat_mixed_ranks",
                [oh.make_node("Concat", ["a", "b"], ["y"], name="bad_concat",
                              axis=1)],
                [("a", F, [2, 3]), ("b", F, [3])], [("y", F, ["m", "n"])])


@model
def matmul_scalar():
    """MatMul of a scalar: the last dimension of a rank-0 shape was read."""
    return make("matmul_scalar",
                [oh.make_node("MatMul", ["a", "b"], ["y"], name="bad_matmul")],
                [("a", F, []), ("b", F, [3])], [("y", F, ["n"])])


@model
def max_pool_kernel_rank():
    """MaxPool with a 3-D kernel on a 2-D image and auto_pad: spatial
    dimension 3 of a rank-4 input was read."""
    return make("max_pool_kernel_rank",
                [oh.make_node("MaxPool", ["x"], ["y"], name="bad_pool",
                              kernel_shape=[2, 2, 2], auto_pad="SAME_UPPER")],
                [("x", F, [1, 1, 4, 4])], [("y", F, ["n", "c", "h", "w"])])


@model
def dropout_empty_ratio():
    """Dropout whose ratio is an empty tensor: its first element was read."""
    return make("dropout_empty_ratio",
                [const("ratio", np.zeros((0,), np.float32)),
                 oh.make_node("Dropout", ["x", "ratio"], ["y"],
                              name="bad_dropout")],
                [("x", F, [3])], [("y", F, [3])])


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "malformed")
    os.makedirs(outdir, exist_ok=True)
    for name, fn in MODELS.items():
        m = fn()
        onnx.checker.check_model(m)
        onnx.save_model(m, os.path.join(outdir, name + ".onnx"))
    print("wrote %d models to %s" % (len(MODELS), outdir))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks the importer's evaluation of nodes over constants
(lib/Import/ONNX/ConstantFolding.cpp) against ONNX's own backend node tests
(Debian libonnx-testdata).

    fold_node_tests.py NODE_DIR --translate effopt-translate

For every node test of the ops named in OPS, every graph input is bound to
its test data as a constant (--constant-input), so the whole graph is over
constants; the imported `forward` must then return constants, equal to the
test's expected outputs (integers and bools exactly, floats within 1e-6
relative, NaN equal to NaN). A test whose result the importer leaves to
a converter (not a constant) counts as `not folded`; one whose values or
types differ is a failure. Prints a line per failure and ends with
`N folded, M not folded, K failed`.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

# The ops the evaluator knows; tests of others are not run.
OPS = {
    "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Min", "Max", "Sum", "Equal",
    "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor",
    "Not", "Identity", "Neg", "Abs", "Sign", "Floor", "Ceil", "Round", "Sqrt",
    "Reciprocal", "Relu", "Where", "Cast", "CastLike", "Reshape", "Flatten",
    "Unsqueeze", "Squeeze", "Concat", "Transpose", "Gather", "Slice", "Expand",
    "Tile", "ScatterND", "Constant",
}

MLIR_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
               "i64": np.int64, "i32": np.int32, "i16": np.int16,
               "i8": np.int8, "ui8": np.uint8, "ui16": np.uint16,
               "ui32": np.uint32, "ui64": np.uint64, "i1": np.bool_}

CONSTANT = re.compile(r"^\s*(%\S+) = eff\.constant dense<(.*)> : "
                      r"tensor<([0-9x]*)([a-z0-9]+)>$")
RETURN = re.compile(r"^\s*return (.*?) :")


def parse_literal(text, dims, dtype):
    """An MLIR dense literal (nested lists, splat, or "0x..." raw data)."""
    shape = [int(d) for d in dims.split("x") if d]
    if text in ("", "[]"):
        return np.zeros(shape, dtype=dtype)
    if text.startswith('"0x'):
        raw = np.frombuffer(bytes.fromhex(text[3:-1]), dtype=np.uint8)
        if dtype == np.bool_:  # bools are packed 8 to a byte
            count = int(np.prod(shape))
            array = np.unpackbits(raw, bitorder="little")[:count].astype(
                np.bool_)
        else:
            array = raw.view(dtype)
        return np.broadcast_to(array, shape) if array.size == 1 else \
            array.reshape(shape)

    def element(token):
        if token in ("true", "false"):
            return token == "true"
        if token.startswith("0x"):  # NaN and infinities as bit patterns
            width = np.dtype(dtype).itemsize
            return np.frombuffer(int(token, 16).to_bytes(width, "little"),
                                 dtype=dtype)[0]
        return int(token) if np.issubdtype(dtype, np.integer) else float(token)

    def convert(v):
        return [convert(x) for x in v] if isinstance(v, list) else element(v)
    quoted = re.sub(r"(0x[0-9A-Fa-f]+|true|false|[-+0-9.eE]+)", r'"\1"', text)
    array = np.array(convert(json.loads(quoted)), dtype=dtype)
    return np.broadcast_to(array, shape)


def run_test(translate, test_dir):
    """(name, status, message): status folded / not-folded / failed."""
    name = os.path.basename(test_dir)
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    data = sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")))[0]
    inits = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    cmd = [translate, os.path.join(test_dir, "model.onnx")]
    for index, input_name in enumerate(inputs):
        cmd.append("--constant-input=%s=%s" % (
            input_name, os.path.join(data, "input_%d.pb" % index)))
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        return name, "not-folded", result.stderr.strip().splitlines()[-1][:200]
    constants, returned = {}, None
    for line in result.stdout.splitlines():
        m = CONSTANT.match(line)
        if m:
            constants[m.group(1)] = (m.group(2), m.group(3), m.group(4))
        m = RETURN.match(line)
        if m:
            returned = [v.strip() for v in m.group(1).split(",")]
    if not returned or any(v not in constants for v in returned):
        return name, "not-folded", "a result is not a constant"
    for index, value in enumerate(returned):
        literal, dims, elem = constants[value]
        expected = numpy_helper.to_array(onnx.load_tensor(
            os.path.join(data, "output_%d.pb" % index)))
        dtype = MLIR_DTYPES.get(elem)
        if dtype is None or np.dtype(dtype) != expected.dtype:
            return name, "failed", "output %d: type %s, expected %s" % (
                index, elem, expected.dtype)
        got = parse_literal(literal, dims, dtype)
        if got.shape != expected.shape:
            return name, "failed", "output %d: shape %s, expected %s" % (
                index, got.shape, expected.shape)
        if np.issubdtype(expected.dtype, np.floating):
            ok = np.allclose(got, expected, rtol=1e-6, atol=0, equal_nan=True)
        else:
            ok = np.array_equal(got, expected)
        if not ok:
            return name, "failed", "output %d: %s, expected %s" % (
                index, got.ravel()[:8].tolist(), expected.ravel()[:8].tolist())
    return name, "folded", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("node_dir")
    ap.add_argument("--translate", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    tests = []
    for test_dir in sorted(glob.glob(os.path.join(args.node_dir, "test_*"))):
        path = os.path.join(test_dir, "model.onnx")
        if not os.path.exists(path) or not glob.glob(
                os.path.join(test_dir, "test_data_set_*")):
            continue
        # The test data holds bfloat16 tensors as uint16 (onnx 1.12).
        if "BFLOAT16" in test_dir:
            continue
        ops = {n.op_type for n in onnx.load(path).graph.node}
        if ops and ops <= OPS and ops != {"Constant"}:
            tests.append(test_dir)
    counts = {"folded": 0, "not-folded": 0, "failed": 0}
    covered = set()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for name, status, message in pool.map(
                lambda t: run_test(args.translate, t), tests):
            counts[status] += 1
            if status == "failed":
                print("FAIL %s: %s" % (name, message))
            elif status == "folded":
                covered.add(name)
    print("%d folded, %d not folded, %d failed" % (
        counts["folded"], counts["not-folded"], counts["failed"]))
    sys.exit(1 if counts["failed"] else 0)


if __name__ == "__main__":
    main()

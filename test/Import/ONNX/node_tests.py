#!/usr/bin/env python3
"""Runs ONNX's backend node tests (Debian libonnx-testdata) through effopt.

Mode `import`: every node test whose ops effopt supports is imported with
effopt-translate, and the types of `forward`'s results must equal the shapes
and dtypes of the test's expected outputs (output_N.pb). Non-float inputs
(shapes, axes, indices, masks) are bound as constants with --constant-input,
as a static-shape compiler receives them.

Known failures are listed, with a reason each, in node_tests_xfail.txt next
to this script; anything else that fails, and any listed test that passes,
is an error. Prints a per-test line for failures and ends with
`N passed, M failed`.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

import onnx
from onnx import TensorProto

MLIR_TYPES = {
    TensorProto.FLOAT: "f32", TensorProto.DOUBLE: "f64",
    TensorProto.FLOAT16: "f16", TensorProto.BFLOAT16: "bf16",
    TensorProto.INT64: "i64", TensorProto.INT32: "i32",
    TensorProto.INT16: "i16", TensorProto.INT8: "i8",
    TensorProto.UINT8: "ui8", TensorProto.UINT16: "ui16",
    TensorProto.UINT32: "ui32", TensorProto.UINT64: "ui64",
    TensorProto.BOOL: "i1",
}
FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
               TensorProto.BFLOAT16}


def mlir_type(dims, elem_type):
    elem = MLIR_TYPES.get(elem_type, "?%d" % elem_type)
    return "tensor<" + "".join("%dx" % d for d in dims) + elem + ">"


def load_tensor(path):
    tensor = TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor


def read_xfails(path):
    xfails = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                name, _, reason = line.partition("#")
                xfails[name.strip()] = reason.strip()
    return xfails


def run_import(translate, test_dir, model):
    data_dir = os.path.join(test_dir, "test_data_set_0")
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    args = [translate, os.path.join(test_dir, "model.onnx"), "--elide-weights"]
    for index, value in enumerate(inputs):
        path = os.path.join(data_dir, "input_%d.pb" % index)
        if not os.path.exists(path):
            return False, "missing %s" % path
        tensor_type = value.type.tensor_type
        is_scalar = (tensor_type.HasField("shape")
                     and len(tensor_type.shape.dim) == 0)
        # Shapes, axes, indices, masks and scalar parameters (ratios, pad
        # values, range bounds) are constants in a real model.
        if tensor_type.elem_type not in FLOAT_TYPES or is_scalar:
            args.append("--constant-input=%s=%s" % (value.name, path))
    result = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or ["exit %d" % result.returncode]
        return False, lines[0][:300]
    if len(result.stderr.strip().splitlines()) > 0:
        return False, "unexpected stderr: " + result.stderr.strip()[:300]
    signature = next((l for l in result.stdout.splitlines()
                      if "func.func @forward" in l), None)
    if signature is None:
        return False, "no forward function in the output"
    results = signature.split(") -> ", 1)[1] if ") -> " in signature else ""
    actual = {name: ty for ty, name in re.findall(
        r'(tensor<[^>]*>) \{eff\.output = "([^"]*)"\}', results)}
    for index, output in enumerate(model.graph.output):
        expected_file = os.path.join(data_dir, "output_%d.pb" % index)
        if not os.path.exists(expected_file):
            return False, "missing %s" % expected_file
        expected = load_tensor(expected_file)
        # The model declares the dtype (the data files store bf16 as uint16).
        declared = output.type.tensor_type.elem_type or expected.data_type
        want = mlir_type(expected.dims, declared)
        got = actual.get(output.name)
        if got != want:
            return False, "output '%s': effopt gives %s, expected %s" % (
                output.name, got, want)
    return True, ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("node_dir", help="folder of ONNX node tests")
    parser.add_argument("--translate", required=True,
                        help="path of effopt-translate")
    parser.add_argument("--xfail", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "node_tests_xfail.txt"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    supported = set(subprocess.run([args.translate, "--list-supported-ops"],
                                   capture_output=True, text=True,
                                   check=True).stdout.split())
    xfails = read_xfails(args.xfail)

    tests = []
    for name in sorted(os.listdir(args.node_dir)):
        test_dir = os.path.join(args.node_dir, name)
        model_path = os.path.join(test_dir, "model.onnx")
        if not os.path.exists(model_path):
            continue
        model = onnx.load(model_path)
        ops = {n.op_type for n in model.graph.node}
        if not ops or not ops <= supported:
            continue
        if any(not o.type.HasField("tensor_type") for o in model.graph.output):
            continue
        tests.append((name, test_dir, model, sorted(ops)))

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(
            lambda t: run_import(args.translate, t[1], t[2]), tests))

    passed = failed = expected_failures = 0
    covered = set()
    for (name, _, _, ops), (ok, reason) in zip(tests, outcomes):
        if name in xfails:
            if ok:
                failed += 1
                print("UNEXPECTED PASS %s (listed: %s)" % (name, xfails[name]))
            else:
                expected_failures += 1
                if args.verbose:
                    print("XFAIL %s: %s" % (name, reason))
            continue
        if ok:
            passed += 1
            covered.update(ops)
            if args.verbose:
                print("PASS %s" % name)
        else:
            failed += 1
            print("FAIL %s [%s]: %s" % (name, " ".join(ops), reason))
    print("ops covered: %s" % " ".join(sorted(covered)))
    print("expected failures: %d (see %s)" % (expected_failures,
                                              os.path.basename(args.xfail)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs ONNX's backend node tests forward through effopt's CPU backend.

For every node test (Debian libonnx-testdata) whose ops effopt imports, the
model is compiled with `effc --mode forward`, each test_data_set_*'s
input_N.pb is fed through libeffrt's C interface (effrt_session_forward),
and every output is compared with output_N.pb exactly as ONNX's own backend
test runner does (onnx.backend.test.runner.Runner.assert_similar_outputs):
the dtypes must be equal, then numpy.testing.assert_allclose with the
runner's tolerances rtol=1e-3, atol=1e-7 (NaN equal to NaN). ONNX's runner
uses these same tolerances for every node test, transcendental f32 ops
(Exp, Erf, Tanh, ...) included, so this script does too. bfloat16 outputs
(stored as uint16 in the test files) are compared as float32.

Graph inputs are run-time inputs. Where effc rejects a model that way, it is
compiled again with the inputs that ONNX node tests use as operands of
static shapes (every non-float input, and every scalar) bound to their data
as constants, as the import runner (test/Import/ONNX/node_tests.py) does.

Known failures, one per line with a reason, are in
onnx_node_forward_xfail.txt next to this script; the tests the importer
rejects on purpose (test/Import/ONNX/node_tests_xfail.txt) are expected to
fail as well and are never counted as passes. Any other failure, and any
listed test that passes, is an error. Prints one line per failure and ends
with `N passed, M failed`.

Compiled code runs in runner subprocesses (`--run`): a crash or a hang in one
model is reported as that test's failure, and the other tests go on.
"""

import argparse
import concurrent.futures
import ctypes
import glob
import json
import os
import re
import selectors
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
RTOL, ATOL = 1e-3, 1e-7  # onnx.backend.test.loader: every node test

NUMPY_DTYPES = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16,
    "bfloat16": np.uint16, "int64": np.int64, "int32": np.int32,
    "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
    "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_,
}


def read_list(path):
    """TEST_NAME  # reason lines."""
    entries = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                name, _, reason = line.partition("#")
                entries[name.strip()] = reason.strip()
    return entries


def load_tensor(path):
    from onnx import TensorProto, numpy_helper
    tensor = TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(
        np.float32)


#===------------------------------------------------------------------------===#
# Compiling
#===------------------------------------------------------------------------===#

def graph_inputs(model):
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def shape_operands(model, data_dir):
    """--constant-input bindings for the inputs that are static-shape
    operands (as test/Import/ONNX/node_tests.py binds them)."""
    from onnx import TensorProto
    floats = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
              TensorProto.BFLOAT16}
    bindings = []
    for index, value in enumerate(graph_inputs(model)):
        tensor_type = value.type.tensor_type
        is_scalar = (tensor_type.HasField("shape")
                     and len(tensor_type.shape.dim) == 0)
        if tensor_type.elem_type not in floats or is_scalar:
            bindings.append((value.name,
                             os.path.join(data_dir, "input_%d.pb" % index)))
    return bindings


def compile_batch(effc, opt_level, work, jobs):
    """Compiles [(name, model path, [(input, file.pb)])] with `effc --batch`
    (one process per chunk: per-model startup would dominate). Returns
    {name: None or the first error line}; a crashing effc fails the model
    it was compiling and a new process takes the rest."""
    results = {}
    out = lambda name: os.path.join(work, name + ".effx")
    while jobs:
        listing = os.path.join(work, "batch-%d-%s.txt" % (os.getpid(),
                                                          jobs[0][0]))
        with open(listing, "w") as f:
            for name, model, bindings in jobs:
                f.write(" ".join([model, out(name)] +
                                 ["%s=%s" % b for b in bindings]) + "\n")
        result = subprocess.run(
            [effc, "--batch", listing, "--mode", "forward",
             "--opt-level", str(opt_level)],
            capture_output=True, text=True)
        by_output = {}
        for line in result.stdout.splitlines():
            if line.startswith("ok "):
                by_output[line[3:]] = None
            elif line.startswith("error "):
                path, _, message = line[6:].partition(": ")
                by_output[path] = message[:300]
        rest = []
        for name, model, bindings in jobs:
            if out(name) in by_output:
                results[name] = by_output[out(name)]
            elif not rest and name not in results:
                stderr = result.stderr.strip().splitlines()
                results[name] = "effc crashed (exit %d)%s" % (
                    result.returncode, ": " + stderr[-1][:200] if stderr else "")
            else:
                rest.append((name, model, bindings))
        jobs = rest
    return results


def compile_all(effc, opt_level, work, tests, workers):
    """Returns {name: (effx or None, bound input names, error)}. Graph
    inputs are run-time inputs; a model effc rejects that way is compiled
    again with its static-shape operands bound as constants."""
    def in_parallel(jobs):
        chunks = [jobs[i::workers] for i in range(workers)]
        results = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            for r in pool.map(lambda c: compile_batch(effc, opt_level, work, c),
                              [c for c in chunks if c]):
                results.update(r)
        return results

    first = in_parallel([(t["name"], os.path.join(t["dir"], "model.onnx"), [])
                         for t in tests])
    compiled, again = {}, []
    for t in tests:
        error = first[t["name"]]
        if error is None:
            compiled[t["name"]] = (os.path.join(work, t["name"] + ".effx"),
                                   [], None)
            continue
        data_dir = sorted(glob.glob(os.path.join(t["dir"], "test_data_set_*")))
        bindings = shape_operands(t["model"], data_dir[0]) if data_dir else []
        compiled[t["name"]] = (None, [], error)
        if bindings:
            again.append((t["name"], os.path.join(t["dir"], "model.onnx"),
                          bindings))
    second = in_parallel(again)
    for name, _, bindings in again:
        if second[name] is None:
            compiled[name] = (os.path.join(work, name + ".effx"),
                              [n for n, _ in bindings], None)
        else:
            compiled[name] = (None, [], second[name])
    return compiled


#===------------------------------------------------------------------------===#
# Running (in a runner subprocess)
#===------------------------------------------------------------------------===#

class Effrt:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        lib = self.lib
        lib.effrt_api_version.restype = ctypes.c_int
        lib.effrt_session_open.restype = ctypes.c_void_p
        lib.effrt_session_open.argtypes = [ctypes.c_char_p]
        lib.effrt_session_close.argtypes = [ctypes.c_void_p]
        lib.effrt_session_manifest.restype = ctypes.c_char_p
        lib.effrt_session_manifest.argtypes = [ctypes.c_void_p]
        lib.effrt_session_set_input.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
        lib.effrt_session_forward.argtypes = [ctypes.c_void_p]
        lib.effrt_session_get_output.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
        lib.effrt_last_error.restype = ctypes.c_char_p
        if lib.effrt_api_version() < 2:
            raise SystemExit("libeffrt.so is too old: no effrt_session_forward")
        lib.effrt_set_num_threads(1)

    def error(self):
        return self.lib.effrt_last_error().decode(errors="replace")


def compare(name, got, ref, dtype):
    """None if `got` matches the expected `ref` as ONNX's runner checks."""
    if dtype == "bfloat16":
        got, ref = bf16_to_f32(got), bf16_to_f32(ref)
    elif got.dtype != ref.dtype:
        return "output '%s': dtype %s, expected %s" % (name, got.dtype,
                                                      ref.dtype)
    if got.shape != ref.shape:
        return "output '%s': shape %s, expected %s" % (name, got.shape,
                                                      ref.shape)
    try:
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)
    except AssertionError:
        g, r = got.astype(np.float64), ref.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~(np.isclose(g, r, rtol=RTOL, atol=ATOL, equal_nan=True))
        index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else ()
        return ("output '%s': %d of %d elements differ; at %s got %r, "
                "expected %r" % (name, int(bad.sum()), got.size, list(index),
                                 got[index].item() if got.ndim else got.item(),
                                 ref[index].item() if ref.ndim else ref.item()))
    return None


def run_one(effrt, test_dir, effx, bound):
    import onnx
    model = onnx.load(os.path.join(test_dir, "model.onnx"),
                      load_external_data=False)
    lib = effrt.lib
    s = lib.effrt_session_open(effx.encode())
    if not s:
        return effrt.error()
    try:
        manifest = json.loads(lib.effrt_session_manifest(s))
        if manifest.get("kind") != "forward":
            return "the .effx is not a forward function"
        inputs = {i["name"]: i for i in manifest["inputs"]}
        outputs = {o["name"]: o for o in manifest["outputs"]}
        names = [i.name for i in graph_inputs(model)]
        data_sets = sorted(glob.glob(os.path.join(test_dir,
                                                  "test_data_set_*")))
        if not data_sets:
            return "no test_data_set_*"
        for data_dir in data_sets:
            for index, input_name in enumerate(names):
                if input_name in bound:
                    continue
                if input_name not in inputs:
                    return "input '%s' is not in the manifest" % input_name
                spec = inputs[input_name]
                value = np.ascontiguousarray(load_tensor(
                    os.path.join(data_dir, "input_%d.pb" % index)))
                want = NUMPY_DTYPES[spec["dtype"]]
                # Some test data store a scalar input as [1]: the same
                # elements, which is what the model reads.
                if (value.size == 1 and spec["shape"] in ([], [1])
                        and value.dtype == want):
                    value = value.reshape(spec["shape"])
                if value.dtype != want or list(value.shape) != spec["shape"]:
                    return ("input '%s': data is %s %s, the model takes %s %s"
                            % (input_name, value.dtype, list(value.shape),
                               spec["dtype"], spec["shape"]))
                if lib.effrt_session_set_input(s, input_name.encode(),
                                               value.ctypes.data,
                                               value.nbytes) != 0:
                    return effrt.error()
            if lib.effrt_session_forward(s) != 0:
                return effrt.error()
            for index, output in enumerate(model.graph.output):
                spec = outputs.get(output.name)
                if spec is None:
                    return "output '%s' is not in the manifest" % output.name
                got = np.empty(spec["shape"], dtype=NUMPY_DTYPES[spec["dtype"]])
                if lib.effrt_session_get_output(s, output.name.encode(),
                                                got.ctypes.data,
                                                got.nbytes) != 0:
                    return effrt.error()
                ref = load_tensor(os.path.join(data_dir,
                                               "output_%d.pb" % index))
                problem = compare(output.name, got, ref, spec["dtype"])
                if problem:
                    return problem
        return None
    finally:
        lib.effrt_session_close(s)


def runner_main(libeffrt):
    """--run: reads JSON jobs from stdin, one per line; prints `START name`
    before each and one JSON result line after."""
    effrt = Effrt(libeffrt)
    for line in sys.stdin:
        job = json.loads(line)
        print("START " + job["name"], flush=True)
        try:
            error = run_one(effrt, job["dir"], job["effx"], set(job["bound"]))
        except Exception as e:  # a harness problem, reported per test
            error = "%s: %s" % (type(e).__name__, e)
        print(json.dumps({"name": job["name"], "error": error}), flush=True)
    return 0


def run_all(libeffrt, jobs, timeout, workers):
    """Runs `jobs` in `workers` runner subprocesses; a runner that crashes
    or hangs fails its current test and is replaced."""
    results = {}
    pending = list(jobs)
    chunks = [pending[i::workers] for i in range(workers)]

    def start(chunk):
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--run",
             "--libeffrt", libeffrt],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1)
        for job in chunk:
            proc.stdin.write(json.dumps(job) + "\n")
        proc.stdin.close()
        return {"proc": proc, "chunk": chunk, "current": None,
                "since": time.monotonic(), "buffer": ""}

    runners = [start(c) for c in chunks if c]
    sel = selectors.DefaultSelector()
    for r in runners:
        sel.register(r["proc"].stdout, selectors.EVENT_READ, r)

    def finish(r, reason):
        sel.unregister(r["proc"].stdout)
        done = set(results)
        rest = [j for j in r["chunk"] if j["name"] not in done]
        if r["current"] and r["current"] not in done:
            results[r["current"]] = reason
            rest = [j for j in rest if j["name"] != r["current"]]
        elif rest and reason:
            results[rest[0]["name"]] = reason
            rest = rest[1:]
        if rest:
            n = start(rest)
            sel.register(n["proc"].stdout, selectors.EVENT_READ, n)

    while sel.get_map():
        events = sel.select(timeout=1.0)
        for key, _ in events:
            r = key.data
            line = r["proc"].stdout.readline()
            if not line:
                code = r["proc"].wait()
                stderr = r["proc"].stderr.read().strip().splitlines()
                why = "crashed (exit %d)%s" % (
                    code, ": " + stderr[-1][:200] if stderr else "")
                if code < 0:
                    why = "crashed (signal %d)" % -code
                finish(r, why if code != 0 or r["current"] else None)
                continue
            line = line.rstrip("\n")
            if line.startswith("START "):
                r["current"] = line[6:]
                r["since"] = time.monotonic()
            elif line.startswith("{"):
                result = json.loads(line)
                results[result["name"]] = result["error"]
                r["current"] = None
        now = time.monotonic()
        for key in list(sel.get_map().values()):
            r = key.data
            if r["current"] and now - r["since"] > timeout:
                r["proc"].kill()
                r["proc"].wait()
                finish(r, "hung (more than %d s)" % timeout)
    return results


#===------------------------------------------------------------------------===#
# Driver
#===------------------------------------------------------------------------===#

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("node_dir", nargs="?", help="folder of ONNX node tests")
    parser.add_argument("--bin", help="folder of effc and effopt-translate")
    parser.add_argument("--libeffrt", required=True, help="path of libeffrt.so")
    parser.add_argument("--work", help="folder for the compiled .effx files")
    parser.add_argument("--xfail", default=os.path.join(
        HERE, "onnx_node_forward_xfail.txt"))
    parser.add_argument("--import-xfail", default=os.path.join(
        SRC, "test", "Import", "ONNX", "node_tests_xfail.txt"))
    parser.add_argument("--opt-level", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=int, default=60,
                        help="seconds one test may run")
    parser.add_argument("--filter", help="regex of test names to run")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        return runner_main(args.libeffrt)
    if not args.node_dir or not args.bin or not args.work:
        parser.error("node_dir, --bin and --work are required")

    import onnx
    effc = os.path.join(args.bin, "effc")
    translate = os.path.join(args.bin, "effopt-translate")
    supported = set(subprocess.run([translate, "--list-supported-ops"],
                                   capture_output=True, text=True,
                                   check=True).stdout.split())
    xfails = read_list(args.xfail)
    import_xfails = read_list(args.import_xfail)
    overlap = set(xfails) & set(import_xfails)
    if overlap:
        print("error: listed in both xfail files: " + " ".join(sorted(overlap)))
        return 1

    tests = []
    for name in sorted(os.listdir(args.node_dir)):
        if args.filter and not re.search(args.filter, name):
            continue
        test_dir = os.path.join(args.node_dir, name)
        model_path = os.path.join(test_dir, "model.onnx")
        if not os.path.exists(model_path):
            continue
        model = onnx.load(model_path, load_external_data=False)
        ops = {n.op_type for n in model.graph.node}
        if not ops or not ops <= supported:
            continue
        if any(not o.type.HasField("tensor_type") for o in model.graph.output):
            continue
        tests.append({"name": name, "dir": test_dir, "model": model,
                      "ops": sorted(ops)})
    os.makedirs(args.work, exist_ok=True)

    started = time.monotonic()
    by_name = compile_all(effc, args.opt_level, args.work, tests, args.jobs)
    compiled = [by_name[t["name"]] for t in tests]
    compile_seconds = time.monotonic() - started

    outcome = {}
    jobs = []
    bound_count = 0
    for test, (effx, bound, error) in zip(tests, compiled):
        if effx is None:
            outcome[test["name"]] = "compile: " + error
        else:
            bound_count += bool(bound)
            jobs.append({"name": test["name"], "dir": test["dir"],
                         "effx": effx, "bound": bound})
    outcome.update(run_all(args.libeffrt, jobs, args.timeout, args.jobs))

    passed = failed = expected = 0
    covered = set()
    for test in tests:
        name, ops = test["name"], test["ops"]
        error = outcome.get(name, "not run")
        listed = xfails.get(name) or import_xfails.get(name)
        if listed is not None:
            if error is None:
                failed += 1
                print("UNEXPECTED PASS %s (listed: %s)" % (name, listed))
            else:
                expected += 1
                if args.verbose:
                    print("XFAIL %s: %s" % (name, error))
            continue
        if error is None:
            passed += 1
            covered.update(ops)
            if args.verbose:
                print("PASS %s" % name)
        else:
            failed += 1
            print("FAIL %s [%s]: %s" % (name, " ".join(ops), error))
    if not args.filter:
        for name in sorted(set(xfails) - {t["name"] for t in tests}):
            failed += 1
            print("STALE %s is listed in %s but is not a test of a supported "
                  "op" % (name, os.path.basename(args.xfail)))
    print("ops covered: %s" % " ".join(sorted(covered)))
    print("compiled %d models in %.0f s; %d with static-shape operands bound "
          "as constants" % (len(tests), compile_seconds, bound_count))
    print("expected failures: %d (see %s and %s)" % (
        expected, os.path.basename(args.xfail),
        os.path.basename(args.import_xfail)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

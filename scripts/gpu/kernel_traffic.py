#!/usr/bin/env python3
"""The bytes each of effopt's own GPU kernels moves, counted from the step
effc forms for `--target cuda` -- on a machine without a GPU.

    kernel_traffic.py MODEL.onnx --bin BUILD/bin [--effc=FLAG ...]
                      [--top N] [--json OUT]

Compiles MODEL with `effc --target cuda` (plus each --effc flag) up to
`eff-gpu-form-kernels` (effc --emit train-step, then effopt-opt with
effc's own lowering pipeline cut after that pass), and for every
`gpu.launch` counts the bytes of each buffer it loads from and stores to,
once, at the buffer's full size; a buffer it stores before it first loads
it (a row group's member reading what an earlier member wrote) counts its
store only. That is what a bandwidth-bound kernel
costs at best. An access indexed by a loaded integer counts, per index
read, the slice after the dimension it selects (a cross-entropy's gather
of each row's target logit: one 32-byte sector per row; an embedding
gradient's scatter: one row per token); other sparse accesses count the
whole buffer. Accesses through views of the same bytes (a reshape, the
same arena offset) count once; workgroup (shared) memory does not count.
The library
calls (cuBLASLt GEMMs, the attention kernels, cuDNN) are listed by name
and count; their traffic is not counted.

Prints the launches and bytes per strategy (`eff.kernel`: elementwise,
row-group, block-reduction, ...), the milliseconds those bytes take at
--bandwidth (default 2.5 TB/s, about 80% of an H100's 3.0 TB/s copy
bandwidth), and the --top launches by bytes with the kernel name a profile
shows (effx_<strategy>_<N>). Use it to decide what a change to the step's
kernels saves before a GPU can time it; `bench/gpu_vs_torch.py --profile`
then measures each kernel's time and DRAM bytes on one.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

ELEMENT_BYTES = {"f64": 8, "f32": 4, "bf16": 2, "f16": 2, "i64": 8,
                 "i32": 4, "i16": 2, "i8": 1, "i1": 1, "index": 8}
ACCESS = re.compile(
    r"(memref\.load|vector\.load|memref\.store|vector\.store|"
    r"memref\.atomic_rmw)\b.*?(%[\w#]+)\[.*:\s*(memref<[^>]*>)")
KERNEL_KIND = re.compile(r'eff\.kernel = "([a-z-]+)"')
KERNEL_NAME = re.compile(r"function\(@(\w+)\)")
LIBRARY_CALL = re.compile(r"call @(effrt_cuda_\w+)")


DEFINES = re.compile(r"\s*(%[\w#]+)(?::\d+)? = (.*)")
SSA_NAME = re.compile(r"%[\w#]+")
INTEGER_ELEMENT = re.compile(r"x(i64|i32|i16|i8)(,|>)|<(i64|i32|i16|i8)>")


def memref_shape(type_text):
    """The static sizes of a memref type (1 for a dynamic one)."""
    inner = re.match(r"memref<([^>]*)>", type_text).group(1)
    return [int(d) if d.strip().isdigit() else 1
            for d in inner.split(",")[0].split("x")[:-1]]


def memref_elements(type_text):
    """Elements of a static memref type."""
    count = 1
    for size in memref_shape(type_text):
        count *= size
    return count


def memref_bytes(type_text):
    """Bytes of a static memref type (its shape times its element size;
    strided views count their shape, not their stride)."""
    inner = re.match(r"memref<([^>]*)>", type_text).group(1)
    dims = inner.split(",")[0].split("x")
    count = 1
    for d in dims[:-1]:
        if not d.strip().isdigit():
            raise ValueError("dynamic memref %s" % type_text)
        count *= int(d)
    return count * ELEMENT_BYTES.get(dims[-1].strip(), 4)


FUNCTION = re.compile(r"\s*func\.func ")
INDEX_CONSTANT = re.compile(r"\s*(%[\w#]+) = arith\.constant (\d+) : index")
VIEW = re.compile(r"\s*(%[\w#]+) = memref\.view (%[\w#]+)\[(%[\w#]+)\]")
RESHAPE = re.compile(r"\s*(%[\w#]+) = memref\.(?:expand_shape|collapse_shape|"
                     r"cast) (%[\w#]+)")


def view_roots(lines):
    """Per line, {value: (root, byte offset)} for the views of a buffer
    (memref.view at a constant offset, reshapes, casts) in the function the
    line is in (SSA names are scoped by function): accesses through
    different views of the same bytes are the same bytes."""
    scopes, constants, roots = [], {}, {}
    for line in lines:
        if FUNCTION.match(line):
            constants, roots = {}, {}
        scopes.append(roots)
        c = INDEX_CONSTANT.match(line)
        if c:
            constants[c.group(1)] = int(c.group(2))
            continue
        v = VIEW.match(line)
        if v and v.group(3) in constants:
            root, offset = roots.get(v.group(2), (v.group(2), 0))
            roots[v.group(1)] = (root, offset + constants[v.group(3)])
            continue
        r = RESHAPE.match(line)
        if r:
            roots[r.group(1)] = roots.get(r.group(2), (r.group(2), 0))
    return scopes


def launches_of(text):
    """[{kind, name, read, written, line}] per gpu.launch, in program order,
    and a Counter of library calls."""
    lines = text.split("\n")
    scopes = view_roots(lines)
    launches, calls = [], collections.Counter()
    i = 0
    while i < len(lines):
        line = lines[i]
        call = LIBRARY_CALL.search(line)
        if call and "func.func" not in line:
            calls[call.group(1)] += 1
        if "gpu.launch " not in line:
            i += 1
            continue
        depth = line.count("{") - line.count("}")
        body = [line]
        j = i + 1
        while depth > 0 and j < len(lines):
            body.append(lines[j])
            depth += lines[j].count("{") - lines[j].count("}")
            j += 1
        roots = scopes[i]
        read, written = {}, {}
        # Values computed from loaded integers (indices a gather or a
        # scatter reads), with the element count of the buffer they came
        # from: an access indexed by one touches that many elements.
        data = {}
        for b in body:
            m = ACCESS.search(b)
            d = DEFINES.match(b)
            if d:
                name, rest = d.groups()
                sources = [data[v] for v in SSA_NAME.findall(rest)
                           if v in data]
                if sources:
                    data[name] = max(sources)
                elif m and "load" in m.group(1) and INTEGER_ELEMENT.search(
                        m.group(3)):
                    data[name] = memref_elements(m.group(3))
            if m:
                op, value, type_text = m.groups()
                # Shared memory is not DRAM traffic.
                if "workgroup" in type_text:
                    continue
                # The bytes, whichever view reaches them.
                value = roots.get(value, (value, 0)) + (
                    memref_bytes(type_text),)
                stores = "store" in op or "atomic" in op
                # A buffer the launch stores before it loads it (a row
                # group's member reading what an earlier member wrote,
                # the same lane at the same address) is read back from
                # the cache, not DRAM.
                if not stores and value in written and value not in read:
                    continue
                target = written if stores else read
                indices = b[m.end(2):].split("]")[0].lstrip("[").split(",")
                gathered = [(k, data[v]) for k, index in enumerate(indices)
                            for v in SSA_NAME.findall(index) if v in data]
                if gathered:
                    # Per index read, the slice of the dimensions after the
                    # last one it selects (a row of a scatter, an element
                    # of a gather: at least its 32-byte sector); never
                    # more than the buffer.
                    dims = memref_shape(type_text)
                    last = max(k for k, _ in gathered)
                    inner = 1
                    for size in dims[last + 1:]:
                        inner *= size
                    element = memref_bytes(type_text) // max(
                        1, memref_elements(type_text))
                    count = max(n for _, n in gathered) * max(
                        inner * element, 32)
                    target[value] = max(target.get(value, 0),
                                        min(count, memref_bytes(type_text)))
                    continue
                target[value] = memref_bytes(type_text)
        text_body = "\n".join(body)
        kind = KERNEL_KIND.search(text_body)
        name = KERNEL_NAME.search(text_body)
        launches.append(dict(kind=kind.group(1) if kind else "?",
                             name=name.group(1) if name else "?",
                             read=sum(read.values()),
                             written=sum(written.values()), line=i + 1))
        i = j
    return launches, calls


def form_kernels(args, work):
    """The step after eff-gpu-form-kernels, as text."""
    effc = os.path.join(args.bin, "effc")
    opt = os.path.join(args.bin, "effopt-opt")
    base = [effc, args.model, "--target", "cuda"] + args.effc
    r = subprocess.run(base + ["--print-pipeline"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        sys.exit("kernel_traffic.py: effc --print-pipeline failed: %s" %
                 (r.stderr.strip().splitlines() or ["?"])[-1])
    lowering = [l for l in r.stdout.splitlines() if l.startswith("lowering: ")]
    if not lowering:
        sys.exit("kernel_traffic.py: no 'lowering:' line in effc "
                 "--print-pipeline")
    pipeline = lowering[0][len("lowering: "):].strip()
    at = pipeline.find("eff-gpu-form-kernels")
    if at < 0:
        sys.exit("kernel_traffic.py: the lowering pipeline has no "
                 "eff-gpu-form-kernels (not --target cuda?)")
    end = pipeline.find("}", at)
    end = end + 1 if end >= 0 and pipeline[at:end].find(",") < 0 else \
        at + len("eff-gpu-form-kernels")
    pipeline = pipeline[:end] + ")"
    step = os.path.join(work, "step.mlir")
    with open(step, "w") as f:
        r = subprocess.run(base + ["--emit", "train-step"], stdout=f,
                           stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        sys.exit("kernel_traffic.py: effc --emit train-step failed: %s" %
                 (r.stderr.strip().splitlines() or ["?"])[-1])
    formed = os.path.join(work, "formed.mlir")
    r = subprocess.run([opt, step, "--pass-pipeline=" + pipeline,
                        "--mlir-elide-elementsattrs-if-larger=16",
                        "-o", formed], stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        sys.exit("kernel_traffic.py: effopt-opt failed: %s" %
                 (r.stderr.strip().splitlines() or ["?"])[-1])
    return open(formed).read()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--bin", required=True, help="effopt's build/bin")
    p.add_argument("--effc", action="append", default=[],
                   help="an extra effc flag (--effc=--precision=bf16)")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--bandwidth", type=float, default=2.5,
                   help="TB/s the milliseconds are counted at")
    p.add_argument("--json", help="write every launch here")
    p.add_argument("--formed", help="keep the formed step here (the launches' "
                   "`line`s point into it)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        formed = form_kernels(args, work)
        launches, calls = launches_of(formed)
    if args.formed:
        with open(args.formed, "w") as f:
            f.write(formed)
    total = sum(k["read"] + k["written"] for k in launches)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(launches=launches, calls=dict(calls),
                           total_bytes=total), f, indent=1)
    ms = lambda b: b / (args.bandwidth * 1e12) * 1e3  # noqa: E731
    print("launches: %d, %.2f GB read and written: %.2f ms at %.1f TB/s" %
          (len(launches), total / 1e9, ms(total), args.bandwidth))
    kinds = collections.defaultdict(lambda: [0, 0])
    for k in launches:
        kinds[k["kind"]][0] += 1
        kinds[k["kind"]][1] += k["read"] + k["written"]
    print("by kind:")
    for kind, (n, b) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print("  %-18s %5d launches %9.3f GB %8.3f ms" % (kind, n, b / 1e9,
                                                          ms(b)))
    print("library calls (not counted):")
    for name, n in sorted(calls.items()):
        print("  %-40s %5d" % (name, n))
    print("the %d launches that move the most:" % args.top)
    for k in sorted(launches, key=lambda k: -(k["read"] + k["written"]))[
            :args.top]:
        print("  %-30s read %9.1f MB written %9.1f MB" % (
            k["name"], k["read"] / 1e6, k["written"] / 1e6))


if __name__ == "__main__":
    main()

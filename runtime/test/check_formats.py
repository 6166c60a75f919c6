#!/usr/bin/env python3
"""Checks effrt's file formats against numpy and the safetensors spec.

usage: /usr/bin/python3 check_formats.py PATH/TO/effrt-inspect [--big] [--keep DIR]

- .npz files written by np.savez and np.savez_compressed (every supported
  dtype, 0-d, empty, strided and large arrays, >65535 entries) are read by
  `effrt-inspect FILE`, whose names, dtypes, shapes, CRC-32 of the raw bytes,
  sums and first values must match numpy's.
- .npz and .safetensors files written by effrt are read back by numpy and by
  an independent safetensors reader written here from the spec (struct +
  json), which also checks effrt's layout (8-byte padded header, contiguous
  and aligned tensors).
- safetensors written here (unpadded header, keys out of order, BF16,
  metadata) are read by effrt.
- Bad inputs (truncated, garbage, Fortran order, bad offsets, ...) make
  effrt-inspect exit 1 with exactly one line on stderr naming the file.
- A conversion killed at random moments never leaves a torn file.
- .effx files written here from docs/Effx.md (version 2: section table,
  state entries marked "init": "zeros" not stored; version 1: the three
  fixed sections) are read by effrt-inspect, which must list the initial
  state and every section; damaged ones (CRCs, overlaps, alignment, unknown
  required kinds, a state section of the wrong size, ...) fail in one line.
- --big adds a >4 GiB array to exercise zip64 sizes and offsets (needs
  ~9 GiB of disk and a minute or two).

Prints one line per check and "N passed, M failed"; exits 1 on any failure.
"""

import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib

import numpy as np

INSPECT = None
PASSED = 0
FAILED = 0


def report(name, ok, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
        print(f"PASS {name}")
    else:
        FAILED += 1
        print(f"FAIL {name}: {detail}")
    sys.stdout.flush()
    return ok


def inspect(*args, timeout=600):
    return subprocess.run([INSPECT, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


# --------------------------------------------------------------------------
# Reading effrt-inspect's output
# --------------------------------------------------------------------------

def parse_listing(stdout):
    """-> (metadata dict, list of (name, dtype, shape, crc, sum, first))."""
    metadata, rows = {}, []
    for line in stdout.splitlines():
        if line.startswith("# metadata "):
            key, _, value = line[len("# metadata "):].partition("=")
            metadata[key] = value
            continue
        if line.startswith("#"):
            continue
        name, dtype, shape, crc, total, first = line.split("\t")
        shape = tuple(int(d) for d in shape.strip("[]").split(",") if d)
        assert crc.startswith("crc32=") and total.startswith("sum=")
        assert first.startswith("first=[") and first.endswith("]")
        values = [v for v in first[len("first=["):-1].split(",") if v]
        rows.append((name, dtype, shape, int(crc[6:], 16),
                     float(total[4:]), values))
    return metadata, rows


def as_float64(a):
    """Elements as float64, bfloat16 (stored as raw uint16) included."""
    return a.astype(np.float64)


def same_value(printed, expected, dtype):
    if dtype.kind == "f":
        value = float(printed)
        if math.isnan(expected):
            return math.isnan(value)
        # effrt prints float32/float16 with 9 significant digits and float64
        # with 17: both round-trip exactly through the original type.
        return dtype.type(value) == dtype.type(expected)
    if dtype.kind == "b":
        return int(printed) == int(expected)
    return int(printed) == int(expected)


def sums(flat):
    """-> (sum, sum of magnitudes) as float64, in chunks to bound memory."""
    total, magnitude = [], 0.0
    for i in range(0, flat.size, 1 << 24):
        part = flat[i:i + (1 << 24)]
        if part.dtype.kind in "biu" and part.dtype.itemsize <= 4:
            exact = int(part.sum(dtype=np.int64))  # exact, no overflow
            total.append(float(exact))
            magnitude += float(np.abs(part.astype(np.int64)).sum())
            continue
        chunk = as_float64(part)
        # fsum is exact but slow; numpy's pairwise sum is accurate enough
        # (error ~1e-16 * log2(n) * sum of magnitudes) for big chunks.
        small = chunk.size <= 1 << 16 and np.isfinite(chunk).all()
        total.append(math.fsum(chunk) if small else float(chunk.sum()))
        magnitude += float(np.abs(chunk).sum())
    return (math.fsum(total) if all(map(math.isfinite, total))
            else float(sum(total))), magnitude


def close_sums(got, want, scale):
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    if math.isinf(want) or math.isinf(got):
        return got == want
    return abs(got - want) <= 1e-12 * max(scale, 1.0)


def check_listing(label, path, arrays, metadata=None, dtypes=None):
    """effrt-inspect PATH must list exactly `arrays` (name -> ndarray), in
    order. `dtypes` overrides the expected dtype name (bfloat16)."""
    proc = inspect(path)
    if not report(f"{label}: effrt-inspect exits 0", proc.returncode == 0,
                  proc.stderr.strip()):
        return
    got_meta, rows = parse_listing(proc.stdout)
    if metadata is not None:
        report(f"{label}: metadata", got_meta == metadata,
               f"{got_meta} != {metadata}")
    names = [r[0] for r in rows]
    if not report(f"{label}: names and order", names == list(arrays),
                  f"{names} != {list(arrays)}"):
        return
    problems = []
    for (name, dtype, shape, crc, total, first) in rows:
        a = arrays[name]
        want_dtype = (dtypes or {}).get(name, a.dtype.name)
        raw = np.ascontiguousarray(a).tobytes()
        if dtype != want_dtype:
            problems.append(f"{name}: dtype {dtype} != {want_dtype}")
        if shape != a.shape:
            problems.append(f"{name}: shape {shape} != {a.shape}")
        if crc != zlib.crc32(raw):
            problems.append(f"{name}: crc32 {crc:08x} != {zlib.crc32(raw):08x}")
        values = a if want_dtype != "bfloat16" else bf16_to_f32(a)
        flat = np.ascontiguousarray(values).reshape(-1)
        want_sum, scale = sums(flat)
        if not close_sums(total, want_sum, scale):
            problems.append(f"{name}: sum {total!r} != {want_sum!r}")
        if len(first) != min(3, flat.size):
            problems.append(f"{name}: {len(first)} first values")
        for i, v in enumerate(first):
            if not same_value(v, flat[i].item(), flat.dtype):
                problems.append(f"{name}: first[{i}] {v} != {flat[i]!r}")
    report(f"{label}: {len(rows)} arrays match numpy", not problems,
           "; ".join(problems[:5]))


# --------------------------------------------------------------------------
# An independent safetensors implementation, from the spec
# --------------------------------------------------------------------------

ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
             "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "|i1",
             "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "|u1",
             "BOOL": "|b1"}
NP_TO_ST = {np.dtype(v).str: k for k, v in ST_DTYPES.items() if k != "BF16"}


def read_safetensors(path):
    """-> (tensors dict in offset order, metadata, layout problems)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    buffer = data[8 + n:]
    problems = []
    if (8 + n) % 8:
        problems.append(f"data buffer starts at {8 + n}, not 8-aligned")
    entries = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    tensors, expected = {}, 0
    for name, info in entries:
        begin, end = info["data_offsets"]
        dtype = np.dtype(ST_DTYPES[info["dtype"]])
        if begin != expected:
            problems.append(f"{name} starts at {begin}, expected {expected}")
        if begin % dtype.itemsize:
            problems.append(f"{name} at {begin} is not aligned")
        count = int(np.prod(info["shape"], dtype=np.int64))
        if end - begin != count * dtype.itemsize:
            problems.append(f"{name} spans {end - begin} bytes")
        tensors[name] = (info["dtype"], np.frombuffer(
            buffer[begin:end], dtype=dtype).reshape(info["shape"]))
        expected = end
    if expected != len(buffer):
        problems.append(f"tensors cover {expected} of {len(buffer)} bytes")
    return tensors, metadata, problems


def write_safetensors(path, tensors, metadata=None, pad=False, shuffle=False):
    """tensors: name -> (ST dtype, ndarray). No alignment unless pad."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, a) in tensors.items():
        raw = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    items = list(header.items())
    if shuffle:
        items.reverse()
    text = json.dumps(dict(items)).encode()
    if pad:
        text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def f32_to_bf16(a):
    bits = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2")


def bf16_to_f32(a):
    return (a.astype("<u4") << 16).view("<f4")


# --------------------------------------------------------------------------
# Test data
# --------------------------------------------------------------------------

def sample_arrays(rng):
    big = rng.standard_normal((1024, 4096)).astype("<f4")  # 16 MiB
    return {
        "f4": rng.standard_normal((10, 64)).astype("<f4"),
        "f2": rng.standard_normal((3, 5)).astype("<f2"),
        "f8": rng.standard_normal((7,)),
        "i8": rng.integers(-2**62, 2**62, (4, 4), dtype="<i8"),
        "i4": rng.integers(-2**31, 2**31, (5,), dtype="<i4"),
        "i2": rng.integers(-2**15, 2**15, (2, 2, 2), dtype="<i2"),
        "i1": rng.integers(-128, 128, (9,), dtype="|i1"),
        "u1": rng.integers(0, 256, (3, 3), dtype="|u1"),
        "u2": rng.integers(0, 2**16, (6,), dtype="<u2"),
        "u4": rng.integers(0, 2**32, (6,), dtype="<u4"),
        "u8": rng.integers(0, 2**63, (6,), dtype="<u8"),
        "b1": rng.random((3, 3)) > 0.5,
        "scalar": np.array(3.5, dtype="<f4"),
        "scalar_i8": np.array(-7, dtype="<i8"),
        "empty": np.zeros((0, 3), dtype="<f4"),
        "special": np.array([np.nan, np.inf, -np.inf, -0.0, 1e-40], "<f4"),
        "strided": big[::3, ::5],
        "big": big,
        "tokens": rng.integers(0, 50257, 100_000, dtype="<u2"),
    }


def expect_failure(label, args, mention):
    proc = inspect(*args)
    lines = proc.stderr.splitlines()
    ok = (proc.returncode == 1 and len(lines) == 1 and mention in lines[0]
          and proc.stdout == "")
    report(f"bad input: {label}", ok,
           f"rc={proc.returncode} stdout={proc.stdout[:80]!r} "
           f"stderr={proc.stderr.strip()!r}")
    return lines[0] if lines else ""


# --------------------------------------------------------------------------
# .effx, from the spec (docs/Effx.md)
# --------------------------------------------------------------------------

EFFX_MAGIC = b"EFFX\r\n\x1a\n"
EFFX_HEADER = struct.Struct("<8sIIQIIII24x")
EFFX_ENTRY = struct.Struct("<II24s40sQQII")
EFFX_HEADER_V1 = struct.Struct("<8sII" + "QQII" * 3 + "II")


def effx_align(n):
    return (n + 63) // 64 * 64


def pack_effx(sections, table_crc_xor=0):
    """sections: [(kind, flags, target, name, bytes, offset or None)]."""
    table_bytes = len(sections) * EFFX_ENTRY.size
    at = effx_align(EFFX_HEADER.size + table_bytes)
    entries, placed = [], []
    for kind, flags, target, name, blob, offset in sections:
        offset = at if offset is None else offset
        at = max(at, effx_align(offset + len(blob)))
        entries.append(EFFX_ENTRY.pack(kind, flags, target, name, offset,
                                       len(blob), zlib.crc32(blob), 0))
        placed.append((offset, blob))
    table = b"".join(entries)
    fields = [EFFX_MAGIC, 2, 64, 64, len(sections), EFFX_ENTRY.size,
              zlib.crc32(table) ^ table_crc_xor]
    header = EFFX_HEADER.pack(*fields, 0)
    header = EFFX_HEADER.pack(*fields, zlib.crc32(header))
    out = bytearray(max([64 + table_bytes] +
                        [o + len(b) for o, b in placed]))
    # The table last: a test may place a section over it.
    for offset, blob in placed:
        out[offset:offset + len(blob)] = blob
    out[:64] = header
    out[64:64 + table_bytes] = table
    return bytes(out)


def pack_effx_v1(manifest, code, image):
    out = bytearray(128)
    fields = []
    for blob in (manifest, code, image):
        off = len(out)
        out += blob + b"\0" * (-len(blob) % 64)
        fields += [off, len(blob), zlib.crc32(blob), 0]
    header = EFFX_HEADER_V1.pack(EFFX_MAGIC, 1, 96, *fields, 0, 0)
    header = EFFX_HEADER_V1.pack(EFFX_MAGIC, 1, 96, *fields,
                                 zlib.crc32(header), 0)
    out[:96] = header
    return bytes(out[:fields[-4] + fields[-3]])


def check_effx(p, rng):
    entries = {
        "w": rng.standard_normal((3, 5)).astype("<f4"),
        "m": np.zeros((3, 5), "<f4"),
        "scale": np.array(65536.0, "<f8"),
        "mask": np.array([True, False, True]),
        "emb": rng.integers(0, 255, (7,)).astype("|u1"),
        "half": rng.standard_normal(9).astype("<f2"),
        "v": np.zeros(11, "<f2"),
        "step": np.array(0, "<i8"),
    }
    names = {"<f4": "float32", "<f8": "float64", "|b1": "bool", "|u1": "uint8",
             "<f2": "float16", "<i8": "int64"}
    state, image, stored, offset = [], bytearray(), bytearray(), 0
    for name, a in entries.items():
        offset = (offset + 63) // 64 * 64
        e = {"name": name, "dtype": names[a.dtype.str], "shape": list(a.shape),
             "offset": offset, "role": "buffer"}
        raw = a.tobytes()
        image += b"\0" * (offset - len(image)) + raw
        if not raw.strip(b"\0"):
            e["init"] = "zeros"
        else:
            stored += raw
        state.append(e)
        offset += len(raw)
    state_bytes = effx_align(len(image))
    image += b"\0" * (state_bytes - len(image))
    manifest = {"format": "effx", "version": 2, "minor_version": 1,
                "kind": "train_step", "model": "spec", "target": "cpu-x86_64",
                "entry": "step", "batch_size": 1,
                "regions": {"state": state_bytes, "arena": 64, "io": 64},
                "loss": {"offset": 0, "dtype": "float32"}, "inputs": [],
                "state": state, "step_counter": "step"}
    text = json.dumps(manifest).encode()
    code = bytes(rng.integers(0, 256, 300, dtype=np.uint8))
    base = [(1, 1, b"", b"manifest", text, None),
            (2, 1, b"cpu-x86_64", b"step", code, None),
            (3, 1, b"cuda-sm_90", b"kernels", code[:100], None),
            (9, 0, b"", b"notes", b"skipped", None),
            (4, 1, b"", b"state", bytes(stored), None)]

    def write(name, data):
        with open(p(name), "wb") as f:
            f.write(data)
        return p(name)

    good = pack_effx(base)
    check_listing("spec-written .effx v2", write("spec.effx", good), entries)
    proc = inspect(p("spec.effx"))
    sections = [l.split() for l in proc.stdout.splitlines()
                if l.startswith("# section ")]
    got = []
    for f in sections:
        if f[2] == "kind":  # "kind 9" is two words
            f = f[:2] + ["kind 9"] + f[4:]
        kind, target, name = f[2], f[3], f[4]
        fields = dict(x.split("=") for x in f[5:8])
        off, size, crc = int(fields["offset"]), int(fields["size"]), fields["crc32"]
        blob = good[off:off + size]
        got.append((kind, target, name, size, f[8], off % 64 == 0,
                    int(crc, 16) == zlib.crc32(blob)))
    want = [(k, t, n, s, r, True, True) for (k, t, n, s, r) in
            [("manifest", "-", "manifest", len(text), "required"),
             ("host_code", "cpu-x86_64", "step", len(code), "required"),
             ("device_code", "cuda-sm_90", "kernels", 100, "required"),
             ("kind 9", "-", "notes", 7, "optional"),
             ("initial_state", "-", "state", len(stored), "required")]]
    report(".effx v2: sections listed with offsets and CRCs", got == want,
           f"{got} != {want}")

    v1 = dict(manifest, version=1)
    v1["state"] = [{k: v for k, v in e.items() if k != "init"} for e in state]
    check_listing("spec-written .effx v1", write("spec-v1.effx", pack_effx_v1(
        json.dumps(v1).encode(), code, bytes(image))), entries)

    def damaged(label, data, mention):
        expect_failure(f".effx {label}", [write("bad.effx", data)], mention)

    damaged("truncated", good[:-3], "truncated: state section ends at byte")
    damaged("header only", good[:40], "the header needs 64 bytes")
    flipped = bytearray(good)
    flipped[len(good) - 2] ^= 1
    damaged("state byte flipped", bytes(flipped), "corrupt state section: CRC-32")
    damaged("table CRC", pack_effx(base, table_crc_xor=1),
            "corrupt section table: CRC-32")
    sec = list(base)
    sec.append((7, 1, b"", b"future", b"x", None))
    damaged("unknown required kind", pack_effx(sec),
            "needs a newer runtime: section kind 7 'future' is required")
    sec = list(base)
    sec[1] = sec[1][:5] + (1000,)
    damaged("misaligned section", pack_effx(sec), "is not 64-byte aligned")
    sec = list(base)
    sec[2] = sec[2][:5] + (64 * 2,)
    damaged("section over the table", pack_effx(sec),
            "the section table (bytes 64..544) overlaps")
    sec = list(base)
    sec.append(sec[2])
    damaged("duplicate section", pack_effx(sec),
            "two device code sections named 'kernels' for cuda-sm_90")
    sec = list(base)
    sec.append((1, 1, b"", b"second", text, None))
    damaged("two manifests", pack_effx(sec), "2 manifest sections")
    sec = list(base)
    sec[1] = (2, 1, b"cpu\0x86", b"step", code, None)
    damaged("target not NUL-padded", pack_effx(sec),
            "the target of section 1 is not printable ASCII padded with NUL")
    sec = list(base)
    sec[4] = sec[4][:4] + (bytes(stored) + b"\0" * 8, None)
    damaged("state section too long", pack_effx(sec),
            f"take {len(stored)} bytes but the initial state section holds "
            f"{len(stored) + 8}")
    bad_manifest = dict(manifest)
    bad_manifest["version"] = 1
    sec = list(base)
    sec[0] = (1, 1, b"", b"manifest", json.dumps(bad_manifest).encode(), None)
    damaged("manifest version 1 in a v2 file", pack_effx(sec),
            "'version' is 1, expected 2")


def main():
    global INSPECT
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__)
        return 2
    # A path, or a bare name found on PATH.
    INSPECT = os.path.abspath(args[0]) if os.path.exists(args[0]) \
        else shutil.which(args[0])
    if not INSPECT:
        print(f"check_formats.py: cannot find {args[0]}", file=sys.stderr)
        return 2
    big = "--big" in args
    keep = args[args.index("--keep") + 1] if "--keep" in args else None
    work = keep or tempfile.mkdtemp(prefix="effrt-formats-")
    os.makedirs(work, exist_ok=True)
    p = lambda name: os.path.join(work, name)
    rng = np.random.default_rng(20240611)
    arrays = sample_arrays(rng)
    try:
        # ---- numpy writes, effrt reads ----
        np.savez(p("stored.npz"), **arrays)
        check_listing("np.savez", p("stored.npz"), arrays)
        np.savez_compressed(p("compressed.npz"), **arrays)
        check_listing("np.savez_compressed", p("compressed.npz"), arrays)
        np.savez(p("positional.npz"), arrays["f4"], arrays["i8"])
        check_listing("np.savez positional", p("positional.npz"),
                      {"arr_0": arrays["f4"], "arr_1": arrays["i8"]})
        np.savez(p("none.npz"))
        check_listing("np.savez of nothing", p("none.npz"), {})
        np.save(p("single.npy"), arrays["i2"])
        check_listing(".npy", p("single.npy"), {"single": arrays["i2"]})
        arrays["tokens"].tofile(p("tokens.bin"))
        check_listing("token .bin", p("tokens.bin"), {"tokens": arrays["tokens"]})

        # More than 65535 entries need zip64 end records.
        many = {f"a{i}": np.array([i % 251], "|u1") for i in range(66000)}
        np.savez(p("many.npz"), **many)
        with open(p("many.npz"), "rb") as f:
            f.seek(-22 - 20, os.SEEK_END)
            has_zip64_end = f.read(4) == b"PK\x06\x07"
        report("np.savez with 66000 arrays writes a zip64 end record", has_zip64_end)
        check_listing("np.savez with 66000 arrays", p("many.npz"), many)

        # ---- effrt writes, numpy and the spec reader read ----
        proc = inspect("--write-safetensors", p("out.safetensors"),
                       p("compressed.npz"), "--metadata", "format=pt",
                       "--metadata", "source=check_formats")
        if report("npz -> safetensors exits 0", proc.returncode == 0, proc.stderr):
            tensors, metadata, problems = read_safetensors(p("out.safetensors"))
            report("effrt safetensors: layout per spec", not problems, problems)
            report("effrt safetensors: metadata",
                   metadata == {"format": "pt", "source": "check_formats"},
                   metadata)
            wrong = [n for n, a in arrays.items()
                     if n not in tensors
                     or tensors[n][0] != NP_TO_ST[a.dtype.str]
                     or tensors[n][1].shape != a.shape
                     or tensors[n][1].tobytes() != np.ascontiguousarray(a).tobytes()]
            report("effrt safetensors: every tensor equals numpy's",
                   not wrong and len(tensors) == len(arrays), wrong)
            check_listing("effrt safetensors via effrt", p("out.safetensors"),
                          {n: arrays[n] for n in tensors},
                          metadata={"format": "pt", "source": "check_formats"})
        leftovers = [n for n in os.listdir(work) if ".tmp." in n]
        report("no temporary files left after writing", not leftovers, leftovers)

        for flag, label in (([], "stored"), (["--compress"], "compressed")):
            out = p(f"effrt-{label}.npz")
            proc = inspect("--write-npz", out, p("out.safetensors"), *flag)
            if not report(f"safetensors -> {label} npz exits 0",
                          proc.returncode == 0, proc.stderr):
                continue
            with zipfile.ZipFile(out) as z:
                report(f"effrt {label} npz: zipfile CRCs ok", z.testzip() is None)
                methods = {i.compress_type for i in z.infolist()}
                report(f"effrt {label} npz: compression method",
                       methods == {zipfile.ZIP_DEFLATED if flag else zipfile.ZIP_STORED},
                       methods)
            with np.load(out) as loaded:
                wrong = [n for n, a in arrays.items()
                         if n not in loaded or loaded[n].dtype != a.dtype
                         or loaded[n].shape != a.shape
                         or loaded[n].tobytes() != np.ascontiguousarray(a).tobytes()]
                report(f"effrt {label} npz: np.load gives the same arrays",
                       not wrong and len(loaded.files) == len(arrays), wrong)
            check_listing(f"effrt {label} npz via effrt", out,
                          {n: arrays[n] for n in read_safetensors(p("out.safetensors"))[0]})

        # ---- the spec writer writes, effrt reads ----
        f32 = rng.standard_normal((4, 8)).astype("<f4")
        spec = {"w": ("F32", f32), "h": ("BF16", f32_to_bf16(f32)),
                "i": ("I8", arrays["i1"]), "flag": ("BOOL", arrays["b1"]),
                "s": ("F64", np.array(2.25))}
        write_safetensors(p("spec.safetensors"), spec,
                          metadata={"epoch": "3"}, shuffle=True)
        check_listing("spec-written safetensors (unpadded, shuffled keys)",
                      p("spec.safetensors"), {n: a for n, (_, a) in spec.items()},
                      metadata={"epoch": "3"}, dtypes={"h": "bfloat16"})
        expect_failure("bfloat16 to npz", ["--write-npz", p("x.npz"),
                       p("spec.safetensors")], "bfloat16")

        # ---- .effx ----
        check_effx(p, rng)

        # ---- bad inputs ----
        with open(p("stored.npz"), "rb") as f:
            stored = f.read()
        with open(p("compressed.npz"), "rb") as f:
            compressed = f.read()

        def bad(name, data):
            with open(p(name), "wb") as f:
                f.write(data)
            return p(name)

        for frac in (0.5, 0.999):
            cut = int(len(stored) * frac)
            expect_failure(f"stored npz truncated to {cut} bytes",
                           [bad(f"cut{frac}.npz", stored[:cut])], f"cut{frac}.npz")
        expect_failure("npz truncated to 30 bytes", [bad("cut30.npz", stored[:30])],
                       "cut30.npz")
        expect_failure("compressed npz truncated", [bad("cutc.npz",
                       compressed[:len(compressed) // 2])], "cutc.npz")
        # Corrupt the deflate stream of the big array but keep the directory.
        with zipfile.ZipFile(p("compressed.npz")) as z:
            info = z.getinfo("big.npy")
        corrupt = bytearray(compressed)
        start = info.header_offset + 30 + len(info.filename) + 200
        for i in range(start, start + 4000, 97):
            corrupt[i] ^= 0x5A
        expect_failure("corrupt deflate data", [bad("corrupt.npz", bytes(corrupt))],
                       "corrupt.npz: array 'big'")
        flipped = bytearray(stored)
        with zipfile.ZipFile(p("stored.npz")) as z:
            info = z.getinfo("f4.npy")
        flipped[info.header_offset + 30 + len(info.filename) + 20 + 200] ^= 1
        expect_failure("flipped bit in stored npz (CRC)",
                       [bad("flipped.npz", bytes(flipped))], "CRC-32 mismatch")
        expect_failure("garbage .npz", [bad("garbage.npz", os.urandom(5000))],
                       "garbage.npz")
        expect_failure("empty .npz", [bad("empty.npz", b"")], "empty.npz")
        expect_failure("text file as .npz", [bad("text.npz", b"hello\n" * 10)],
                       "text.npz")
        np.savez(p("fortran.npz"), x=np.asfortranarray(arrays["f4"]))
        expect_failure("Fortran-order array", [p("fortran.npz")], "Fortran order")
        np.savez(p("bigendian.npz"), x=arrays["f4"].astype(">f4"))
        expect_failure("big-endian array", [p("bigendian.npz")],
                       "big-endian dtype '>f4'")
        np.savez(p("complex.npz"), x=np.zeros(3, np.complex64))
        expect_failure("complex array", [p("complex.npz")], "dtype '<c8'")
        np.savez(p("object.npz"), x=np.array([{"a": 1}], dtype=object))
        expect_failure("object array", [p("object.npz")], "dtype '|O'")
        with zipfile.ZipFile(p("notnpy.npz"), "w") as z:
            z.writestr("readme.txt", "not an array")
        expect_failure("non-npy entry", [p("notnpy.npz")], "not an .npy array")
        expect_failure("truncated .npy", [bad("cut.npy",
                       open(p("single.npy"), "rb").read()[:-3])], "cut.npy")

        with open(p("out.safetensors"), "rb") as f:
            good = f.read()
        (n,) = struct.unpack("<Q", good[:8])
        expect_failure("safetensors truncated in the data",
                       [bad("cutdata.safetensors", good[:-100])], "truncated")
        expect_failure("safetensors truncated in the header",
                       [bad("cuthdr.safetensors", good[:8 + n // 2])], "truncated")
        expect_failure("safetensors of 3 bytes",
                       [bad("tiny.safetensors", good[:3])], "tiny.safetensors")
        expect_failure("safetensors with huge header length",
                       [bad("huge.safetensors", struct.pack("<Q", 2**62) + good[8:])],
                       "header length")
        expect_failure("safetensors with invalid JSON",
                       [bad("json.safetensors", good[:8] + b"{\"a\": [" +
                            good[15:])], "invalid safetensors JSON header")
        one = rng.standard_normal(4).astype("<f4")

        def offsets_case(name, entries, data_len):
            header = {k: {"dtype": "F32", "shape": [s], "data_offsets": o}
                      for k, (s, o) in entries.items()}
            text = json.dumps(header).encode()
            return bad(name, struct.pack("<Q", len(text)) + text + bytes(data_len))

        expect_failure("overlapping offsets", [offsets_case(
            "overlap.safetensors", {"a": (4, [0, 16]), "b": (4, [8, 24])}, 24)],
            "tensor 'b' starts at byte 8")
        expect_failure("gap between tensors", [offsets_case(
            "gap.safetensors", {"a": (4, [0, 16]), "b": (4, [20, 36])}, 36)],
            "tensor 'b' starts at byte 20")
        expect_failure("offsets past the end", [offsets_case(
            "past.safetensors", {"a": (4, [0, 16])}, 8)], "tensors need 16 bytes")
        expect_failure("size does not match shape", [offsets_case(
            "size.safetensors", {"a": (5, [0, 16])}, 16)], "needs 20 bytes")
        expect_failure("end before begin", [offsets_case(
            "order.safetensors", {"a": (0, [16, 0])}, 16)], "end before")
        del one

        odd = bad("odd.bin", b"\x01\x02\x03")
        expect_failure("odd-length token file", [odd], "odd length")
        expect_failure("missing file", [p("missing.npz")], "No such file")
        expect_failure("directory", [work + "/"], "is a directory")
        expect_failure("unknown format", [bad("x.dat", b"plain text here")],
                       "unrecognized file format")
        expect_failure("write into a missing directory",
                       ["--write-safetensors", p("no/dir/x.safetensors"),
                        p("stored.npz")], "cannot create")
        proc = inspect()
        report("no arguments: usage, exit 2", proc.returncode == 2, proc.returncode)

        # ---- a killed writer never leaves a torn file ----
        shutil.copy(p("spec.safetensors"), p("target.safetensors"))
        old = open(p("target.safetensors"), "rb").read()
        outcomes = set()
        torn = []
        for delay in (0.0, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3):
            child = subprocess.Popen([INSPECT, "--write-safetensors",
                                      p("target.safetensors"), p("stored.npz")])
            time.sleep(delay)
            child.send_signal(signal.SIGKILL)
            child.wait()
            now = open(p("target.safetensors"), "rb").read()
            if now == old:
                outcomes.add("old")
                continue
            try:
                tensors, _, problems = read_safetensors(p("target.safetensors"))
                if problems or set(tensors) != set(arrays):
                    torn.append(delay)
                outcomes.add("new")
                old = now
            except Exception as e:  # noqa: BLE001 - a torn file fails to parse
                torn.append(f"{delay}: {e}")
        report(f"killed writes leave old or new file ({sorted(outcomes)})",
               not torn, torn)

        if big:
            check_big(p, rng)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)

    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


def check_big(p, rng):
    """A >4 GiB entry needs zip64 sizes; the entry after it a zip64 offset."""
    n = (1 << 32) + 4096
    huge = np.zeros(n, dtype="|u1")
    huge[::4099] = 7
    tail = rng.standard_normal(16).astype("<f4")
    np.savez(p("huge.npz"), huge=huge, tail=tail)
    check_listing("np.savez >4 GiB (zip64)", p("huge.npz"),
                  {"huge": huge, "tail": tail})
    os.remove(p("huge.npz"))
    np.savez_compressed(p("hugec.npz"), huge=huge, tail=tail)
    check_listing("np.savez_compressed >4 GiB (zip64)", p("hugec.npz"),
                  {"huge": huge, "tail": tail})
    proc = inspect("--write-npz", p("effrt-huge.npz"), p("hugec.npz"))
    os.remove(p("hugec.npz"))
    if report("effrt writes >4 GiB npz", proc.returncode == 0, proc.stderr):
        with np.load(p("effrt-huge.npz"), mmap_mode=None) as loaded:
            report("np.load reads effrt's >4 GiB npz",
                   np.array_equal(loaded["tail"], tail) and
                   loaded["huge"].shape == huge.shape and
                   int(loaded["huge"].sum()) == int(huge.sum(dtype=np.int64)))
        os.remove(p("effrt-huge.npz"))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The runtime's .npz reader against libzip, on a large archive.

Writes one archive of float32 arrays (about --gib GiB in three arrays) with
np.savez (stored) and np.savez_compressed (deflated), then reads each the
way effrun's data loader does (every array, CRCs checked) with effrt's
reader and with libzip (build/bin/effrt-npz-bench, built when libzip-dev is
installed), alternating, --rounds times. Prints per reader and archive the
median and best wall time, CPU time, peak resident memory and how much of
what stays resident is anonymous (a copy) or file-backed (a mapping the
kernel may drop and fault back in). The files are read from the page cache
("warm"); with --cold (root only) each read starts after dropping the cache.

usage: /usr/bin/python3 bench/npz_read.py [--bin build/bin] [--gib 1.5]
       [--rounds 5] [--dir DIR] [--cold]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np


def make_archives(directory, gib):
    stored = os.path.join(directory, "stored.npz")
    deflated = os.path.join(directory, "deflated.npz")
    if os.path.exists(stored) and os.path.exists(deflated):
        return stored, deflated
    rows = max(1, int(gib * 2 ** 30 / 4 / 1600))
    rng = np.random.default_rng(0)
    # Features rounded to 3 decimals and small integer labels compress like
    # real data (to about 55%), unlike raw random floats.
    arrays = {
        "x": np.round(rng.standard_normal((rows, 1024), dtype=np.float32), 3),
        "y": np.round(rng.standard_normal((rows, 512), dtype=np.float32), 3),
        "z": rng.integers(0, 1000, (rows, 64)).astype(np.float32),
    }
    np.savez(stored, **arrays)
    np.savez_compressed(deflated, **arrays)
    return stored, deflated


def read_once(tool, reader, path, cold):
    if cold:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
    else:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
    out = subprocess.run([tool, reader, path], check=True,
                         capture_output=True, text=True).stdout
    return {k: float(v) for k, v in
            (item.split("=") for item in out.split() if "=" in item
             and not item.startswith("mode="))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--gib", type=float, default=1.5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir")
    ap.add_argument("--cold", action="store_true")
    args = ap.parse_args()
    tool = os.path.join(args.bin, "effrt-npz-bench")
    if not os.path.exists(tool):
        sys.exit(f"npz_read.py: {tool} is missing (install libzip-dev and "
                 "rebuild)")
    directory = args.dir or tempfile.mkdtemp(prefix="npz-read-")
    os.makedirs(directory, exist_ok=True)
    stored, deflated = make_archives(directory, args.gib)
    mib = lambda b: b / 2 ** 20
    print(f"{'archive':12} {'reader':7} {'file MiB':>9} {'wall s':>7} "
          f"{'best s':>7} {'cpu s':>6} {'peak RSS MiB':>13} "
          f"{'anon MiB':>9} {'file-backed MiB':>16}")
    for path in (stored, deflated):
        runs = {"effrt": [], "libzip": []}
        for _ in range(args.rounds):
            for reader in runs:
                runs[reader].append(read_once(tool, reader, path, args.cold))
        for reader, rs in runs.items():
            wall = [r["wall_s"] for r in rs]
            print(f"{os.path.basename(path):12} {reader:7} "
                  f"{mib(os.path.getsize(path)):9.0f} "
                  f"{statistics.median(wall):7.2f} {min(wall):7.2f} "
                  f"{statistics.median(r['cpu_s'] for r in rs):6.2f} "
                  f"{mib(max(r['peak_rss'] for r in rs)):13.0f} "
                  f"{mib(rs[-1]['rss_anon']):9.0f} "
                  f"{mib(rs[-1]['rss_file']):16.0f}")


if __name__ == "__main__":
    main()

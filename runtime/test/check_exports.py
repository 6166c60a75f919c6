#!/usr/bin/env python3
"""Checks that loaders export what loaded code imports.

  check_exports.py CODE.so [CODE.so ...] -- PROVIDER [PROVIDER ...]

Every undefined dynamic symbol of each CODE shared object named effrt_* or
mgpu* (the runtime's kernels, the MLIR GPU runtime ABI) must be defined and
exported by every PROVIDER (effrun, effrt-unit-tests, libeffrt.so), or
loading that code there fails. Uses binutils' nm. Prints one line per
CODE; exits 1 naming the first missing symbol.
"""
import subprocess
import sys


def symbols(path, undefined):
    flag = "--undefined-only" if undefined else "--defined-only"
    out = subprocess.run(["nm", "-D", flag, path], capture_output=True,
                         text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if parts:
            names.add(parts[-1].split("@")[0])
    return names


split = sys.argv.index("--")
codes, providers = sys.argv[1:split], sys.argv[split + 1:]
exported = {p: symbols(p, undefined=False) for p in providers}
for code in codes:
    wanted = sorted(s for s in symbols(code, undefined=True)
                    if s.startswith(("effrt_", "mgpu")))
    if not wanted:
        sys.exit(f"{code}: imports no runtime symbol (not loaded code?)")
    for provider, names in exported.items():
        missing = [s for s in wanted if s not in names]
        if missing:
            sys.exit(f"{provider} does not export {missing[0]}, which {code} "
                     f"imports")
    print(f"{code}: {len(wanted)} imports exported by {len(providers)} loaders")

#!/usr/bin/env python3
"""numpy's side of form-kernels-scatter-compacted-emulated.mlir: recomputes
the test's four scatter-adds with its data, adding each row's updates in
the serial order in float32, and compares the bits with what the emulated
kernels printed.

    scatter_compacted_reference.py OUTPUT

OUTPUT holds the runner's four prints (each table's bits as int32, the two
tables of @two_tables stacked), their headers dropped. Prints one line per table; exits 1 on a mismatch.
"""
import re
import sys

import numpy as np


def value(n, j):
    """((7 n + 13 j) mod 17 - 8) / 3 + n / 8 in float32, as @value."""
    v = np.float32((7 * n + 13 * j) % 17 - 8)
    return np.float32(v / np.float32(3)) + np.float32(n) * np.float32(0.125)


def matrix(rows, cols):
    return np.array([[value(n, j) for j in range(cols)] for n in range(rows)],
                    np.float32)


def scatter(rows, grads, size):
    """Adds grads[k] into row rows[k] (negatives wrapped) in order."""
    table = np.zeros((size,) + grads.shape[1:], np.float32)
    for r, g in zip(rows, grads):
        r = r + size if r < 0 else r
        table[r] = table[r] + g  # float32 + float32, rounded once
    return table


def token():
    idx = []
    for n in range(300):
        k = n % 6
        idx.append({0: 5, 1: -1, 2: -3}.get(k, (37 * n) % 1001))
    return idx, scatter(idx, matrix(300, 40), 1001)


def wide():
    idx = [{0: 2, 1: -1}.get(t % 4, t % 5) for t in range(50)]
    return scatter(idx, matrix(50, 1200), 7)


def interleaved():
    # Serial s1, spread f, serial s2: row s = 9 s1 + s2 in order.
    idx = [(5 * s) % 13 - 6 for s in range(36)]
    return scatter(idx, matrix(36, 24), 13)


def two_tables():
    """g[r] += dy and h[r] = h[r] / 2 + dy for the first 20 tokens, rows
    mod 9, as @two_tables."""
    idx, _ = token()
    dy = matrix(300, 40)[:20, :16]
    g = np.zeros((9, 16), np.float32)
    h = np.zeros((9, 16), np.float32)
    for r, d in zip(idx[:20], dy):
        r = (r + 1001 if r < 0 else r) % 9
        g[r] = g[r] + d
        h[r] = h[r] * np.float32(0.5) + d
    return np.concatenate([g, h])


def main():
    text = open(sys.argv[1]).read()
    blocks = [re.findall(r"-?\d+", block)
              for block in re.findall(r"\[\[.*?\]\]", text, re.S)]
    idx, table = token()
    hot = sum(1 for r in idx if r == 5)
    ok = True
    for name, want, got, note in (
            ("token", table, blocks[0], f" (row 5: {hot} updates)"),
            ("wide", wide(), blocks[1], ""),
            ("interleaved", interleaved(), blocks[2], ""),
            ("two tables", two_tables(), blocks[3], "")):
        want = want.view(np.int32).reshape(-1)
        got = np.array([int(x) for x in got], np.int64)
        if got.shape != want.shape or not np.array_equal(got, want):
            print(f"{name}: MISMATCH ({got.size} printed, {want.size} expected)")
            ok = False
        else:
            print(f"{name}: {want.size} values bit-identical to numpy{note}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

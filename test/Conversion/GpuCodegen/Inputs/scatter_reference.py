#!/usr/bin/env python3
"""numpy's side of form-kernels-scatter-emulated.mlir: recomputes the two
scatter-adds with the test's data, adding each row's tokens in order in
float32, and compares the bits with what the emulated kernels printed.

    scatter_reference.py OUTPUT

OUTPUT holds the runner's three prints, their headers dropped (token-table rows 0-2, 499-501,
998-1000 as int32 bits; the position table's bits; the count of nonzero
elements of the token table). Prints one line per comparison; exits 1 on a
mismatch.
"""
import re
import sys

import numpy as np

CHOICES = [0, 1, 2, 999, 1000, -1, -2, 500, 501]
POSITIONS = [0, 1, 2, 3, 3, 2, 1, 0, 7, 7, 7, -1, 9, 10, 11, 12]
B, T, C, V, P = 3, 16, 160, 1001, 16


def data():
    idx = np.zeros((B, T), np.int64)
    dy = np.zeros((B, T, C), np.float32)
    for b in range(B):
        for t in range(T):
            n = 16 * b + t
            idx[b, t] = CHOICES[(4 * n + n // 9) % 9]
            j = np.arange(C)
            v = ((7 * n + 13 * j) % 17 - 8).astype(np.float32)
            dy[b, t] = v / np.float32(3) + np.float32(n) * np.float32(0.125)
    return idx, dy


def scatter(rows, grads, size):
    """Adds grads[k] into row rows[k] (negatives wrapped) one token at a
    time: the serial order."""
    table = np.zeros((size, C), np.float32)
    for r, g in zip(rows, grads):
        r = r + size if r < 0 else r
        table[r] = table[r] + g  # float32 + float32, rounded once
    return table


def main():
    text = open(sys.argv[1]).read()
    blocks = [re.findall(r"-?\d+", block)
              for block in re.findall(r"\[\[.*?\]\]", text, re.S)]
    idx, dy = data()
    table = scatter(idx.reshape(-1), dy.reshape(-1, C), V)
    ptable = scatter(POSITIONS, dy[0], P)
    ok = True
    token_rows = np.concatenate([table[0:3], table[499:502], table[998:1001]])
    for name, want, got in (("token rows", token_rows, blocks[0]),
                            ("position rows", ptable, blocks[1])):
        want = want.view(np.int32).reshape(-1)
        got = np.array([int(x) for x in got], np.int64)
        if got.shape != want.shape or not np.array_equal(got, want):
            print(f"{name}: MISMATCH ({got.size} printed, {want.size} expected)")
            ok = False
        else:
            print(f"{name}: {want.size} values bit-identical to numpy")
    count = int(re.findall(r"^\[(\d+)\]$", text, re.M)[-1])
    want_count = int(np.count_nonzero(table))
    print(f"nonzero: {count} as numpy" if count == want_count
          else f"nonzero: MISMATCH {count} vs {want_count}")
    ok &= count == want_count
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

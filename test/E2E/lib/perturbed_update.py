#!/usr/bin/env python3
"""zoo_vs_torch.py with effopt's update of one tensor made wrong on purpose:
a check that the comparison (the switch-point flip fit included) fails a
real error instead of explaining it away.

    perturbed_update.py TENSOR SCALE ZOO_VS_TORCH_ARGS...

Every state tensor named TENSOR that the harness reads back from effopt is
before + (read - before) * SCALE, `before` being what the harness last
wrote to it (PyTorch's state at the start of the step)."""
import sys

import numpy as np

import zoo_vs_torch


def main():
    target, scale = sys.argv[1], float(sys.argv[2])
    read, write = zoo_vs_torch.Session.read, zoo_vs_torch.Session.write
    written = {}

    def remember(self, name, value):
        written[name] = np.array(value, dtype=np.float64)
        return write(self, name, value)

    def perturbed(self, name):
        value = read(self, name)
        if name == target and name in written:
            before = written[name].reshape(value.shape)
            value = (before + (value - before) * scale).astype(value.dtype)
        return value

    zoo_vs_torch.Session.read = perturbed
    zoo_vs_torch.Session.write = remember
    sys.argv = [zoo_vs_torch.__file__] + sys.argv[3:]
    zoo_vs_torch.main()


if __name__ == "__main__":
    main()

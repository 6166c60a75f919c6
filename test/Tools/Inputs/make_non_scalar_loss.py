"""Exports a model whose first output (the loss, by effopt's contract) is not
a scalar: effc must refuse it in one line."""
import sys

import torch


class NotALoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


torch.onnx.export(NotALoss(), torch.randn(2, 4), sys.argv[1],
                  input_names=["x"], output_names=["y"],
                  do_constant_folding=False)

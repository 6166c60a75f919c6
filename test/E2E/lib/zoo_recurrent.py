"""torch.nn recurrent nets at small sizes, for zoo_vs_torch.py.

Each function returns a ZooCase: the model with its loss (the graph's first
output), a batch size and its batches. torch exports nn.LSTM/GRU/RNN as
ONNX LSTM/GRU/RNN nodes whose W/R/B are Slice/Concat/Unsqueeze of the named
parameters (gates reordered to ONNX's), which effopt unrolls over the
sequence; the harness checks that every named parameter is trained."""
import numpy as np
import torch

from zoo_vs_torch import ZooCase


def sequences(batch, steps, features, classes, seed=0, state_shape=None,
              states=("h0", "c0")):
    """Batches {x [batch, steps, features], y [batch]} (and `states` of
    `state_shape` when given)."""
    def batches(step):
        rng = np.random.RandomState(seed * 1000 + step)
        out = {"x": rng.randn(batch, steps, features).astype(np.float32)}
        if state_shape is not None:
            for name in states:
                out[name] = (0.5 * rng.randn(*state_shape)).astype(np.float32)
        out["y"] = rng.randint(0, classes, size=batch).astype(np.int64)
        return out
    return batches


class LSTMClassifier(torch.nn.Module):
    """2-layer bidirectional batch-first LSTM from given (h0, c0); the
    classifier reads the last step's output and the final hidden states."""

    def __init__(self, features, hidden, classes):
        super().__init__()
        self.rnn = torch.nn.LSTM(features, hidden, num_layers=2,
                                 bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(2 * hidden + 2 * hidden, classes)

    def forward(self, x, h0, c0, y):
        out, (h, c) = self.rnn(x, (h0, c0))
        last = torch.cat([out[:, -1], h[-2], h[-1]], dim=1)
        logits = self.head(last)
        return torch.nn.functional.cross_entropy(logits, y), logits


class GRUClassifier(torch.nn.Module):
    """2-layer GRU (sequence-first inside, no initial state): mean of the
    outputs over time."""

    def __init__(self, features, hidden, classes):
        super().__init__()
        self.rnn = torch.nn.GRU(features, hidden, num_layers=2)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x, y):
        out, _ = self.rnn(x.transpose(0, 1))
        logits = self.head(out.mean(dim=0))
        return torch.nn.functional.cross_entropy(logits, y), logits


class RNNClassifier(torch.nn.Module):
    """Elman RNN (tanh), its final hidden state classified."""

    def __init__(self, features, hidden, classes):
        super().__init__()
        self.rnn = torch.nn.RNN(features, hidden, nonlinearity="tanh",
                                batch_first=True)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x, y):
        _, h = self.rnn(x)
        logits = self.head(h[-1])
        return torch.nn.functional.cross_entropy(logits, y), logits


class BiGRUClassifier(torch.nn.Module):
    """2-layer bidirectional batch-first GRU without biases, from a given
    h0; the final hidden states of the top layer classified."""

    def __init__(self, features, hidden, classes):
        super().__init__()
        self.rnn = torch.nn.GRU(features, hidden, num_layers=2, bias=False,
                                bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(2 * hidden, classes)

    def forward(self, x, h0, y):
        _, h = self.rnn(x, h0)
        logits = self.head(torch.cat([h[-2], h[-1]], dim=1))
        return torch.nn.functional.cross_entropy(logits, y), logits


class ReluRNNClassifier(torch.nn.Module):
    """2-layer bidirectional Elman RNN with ReLU: mean of the outputs."""

    def __init__(self, features, hidden, classes):
        super().__init__()
        self.rnn = torch.nn.RNN(features, hidden, num_layers=2,
                                nonlinearity="relu", bidirectional=True)
        self.head = torch.nn.Linear(2 * hidden, classes)

    def forward(self, x, y):
        out, _ = self.rnn(x.transpose(0, 1))
        logits = self.head(out.mean(dim=0))
        return torch.nn.functional.cross_entropy(logits, y), logits


def lstm():
    torch.manual_seed(0)
    batch, steps, features, hidden, classes = 3, 6, 5, 8, 4
    return ZooCase(LSTMClassifier(features, hidden, classes), batch,
                   sequences(batch, steps, features, classes, seed=1,
                             state_shape=(4, batch, hidden)),
                   ("logits",))


def gru():
    torch.manual_seed(0)
    batch, steps, features, hidden, classes = 3, 7, 5, 8, 4
    return ZooCase(GRUClassifier(features, hidden, classes), batch,
                   sequences(batch, steps, features, classes, seed=2),
                   ("logits",))


def rnn():
    torch.manual_seed(0)
    batch, steps, features, hidden, classes = 4, 8, 5, 8, 4
    return ZooCase(RNNClassifier(features, hidden, classes), batch,
                   sequences(batch, steps, features, classes, seed=3),
                   ("logits",))


def gru_bidirectional():
    torch.manual_seed(0)
    batch, steps, features, hidden, classes = 3, 5, 4, 6, 4
    return ZooCase(BiGRUClassifier(features, hidden, classes), batch,
                   sequences(batch, steps, features, classes, seed=4,
                             state_shape=(4, batch, hidden), states=("h0",)),
                   ("logits",))


def rnn_relu_bidirectional():
    torch.manual_seed(0)
    batch, steps, features, hidden, classes = 4, 6, 5, 8, 4
    return ZooCase(ReluRNNClassifier(features, hidden, classes), batch,
                   sequences(batch, steps, features, classes, seed=5),
                   ("logits",))

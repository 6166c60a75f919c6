#!/usr/bin/python3
"""Build small recurrent models (ONNX LSTM, GRU, RNN) for the importer tests.

Usage:
    /usr/bin/python3 test/Import/ONNX/Inputs/make_recurrent_models.py OUTDIR [--torch]

`recurrent.test` runs it into its temporary directory. One node per model,
tiny sizes (T=3, batch 2, hidden 2), with the inputs and attributes the
converter must handle: all of LSTM's inputs (B, initial_h, initial_c,
peepholes P, a constant sequence_lens equal to T) bidirectional; GRU with
linear_before_reset 0 and 1; RNN reverse with Relu and batch-major layout;
and models that must be rejected (run-time and short sequence_lens, an
activation eff does not unroll, input_forget). Every model passes
`onnx.checker.check_model(full_check=True)` and strict shape inference.
With --torch, also exports nn.EmbeddingBag as torch 1.13 does (a Loop),
which the importer refuses with a workaround. Needs Debian's python3-onnx
(1.12) and numpy (python3-torch for --torch).
"""
import os
import sys

import numpy as np
from onnx import TensorProto as TP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_test_models import Graph, check, save  # noqa: E402

F, I64 = TP.FLOAT, TP.INT64
T, B, I, H = 3, 2, 3, 2
MODELS = {}


def model(fn):
    MODELS[fn.__name__] = fn
    return fn


def recurrent(name, op, gates, directions=1, layout=0, bias=True,
              states=(), peepholes=False, seq_lens=None, outputs=("Y", "Y_h"),
              **attrs):
    """One `op` node; inputs after X are parameters (or graph inputs for
    the states), outputs all graph outputs."""
    g = Graph(name, seed=len(name))
    x_shape = [B, T, I] if layout else [T, B, I]
    x = g.input("X", F, x_shape)
    w = g.param("W", [directions, gates * H, I])
    r = g.param("R", [directions, gates * H, H])
    inputs = [x, w, r, g.param("B", [directions, 2 * gates * H]) if bias else ""]
    if seq_lens is None:
        inputs.append("")
    elif seq_lens == "input":
        inputs.append(g.input("sequence_lens", TP.INT32, [B]))
    else:
        inputs.append(g.const(np.array(seq_lens, np.int32)))
    state_shape = [B, directions, H] if layout else [directions, B, H]
    for s in ("initial_h", "initial_c")[: {"LSTM": 2}.get(op, 1)]:
        inputs.append(g.input(s, F, state_shape) if s in states else "")
    if peepholes:
        inputs.append(g.param("P", [directions, 3 * H]))
    while inputs and inputs[-1] == "":
        inputs.pop()
    if layout:
        attrs["layout"] = layout
    out_names = list(outputs)
    g.op(op, inputs, outputs=out_names, name="/rnn/" + op, hidden_size=H,
         **attrs)
    y_shape = ([B, T, directions, H] if layout else [T, directions, B, H])
    for o in out_names:
        if o:
            g.output(o, F, y_shape if o == "Y" else state_shape)
    return g.model()


@model
def lstm_bidirectional():
    return recurrent("lstm_bidirectional", "LSTM", 4, directions=2,
                     states=("initial_h", "initial_c"), peepholes=True,
                     seq_lens=[T] * B, outputs=("Y", "Y_h", "Y_c"),
                     direction="bidirectional")


@model
def gru_linear_before_reset():
    return recurrent("gru_linear_before_reset", "GRU", 3,
                     linear_before_reset=1)


@model
def gru_reset_before_linear():
    return recurrent("gru_reset_before_linear", "GRU", 3,
                     states=("initial_h",))


@model
def rnn_reverse_relu_batchwise():
    return recurrent("rnn_reverse_relu_batchwise", "RNN", 1, layout=1,
                     bias=False, states=("initial_h",), direction="reverse",
                     activations=["Relu"], clip=3.0)


# Rejected.

@model
def rnn_runtime_seq_lens():
    return recurrent("rnn_runtime_seq_lens", "RNN", 1, seq_lens="input")


@model
def rnn_short_seq_lens():
    return recurrent("rnn_short_seq_lens", "RNN", 1, seq_lens=[T, T - 1])


@model
def gru_elu_activation():
    return recurrent("gru_elu_activation", "GRU", 3,
                     activations=["Sigmoid", "Elu"])


@model
def lstm_input_forget():
    return recurrent("lstm_input_forget", "LSTM", 4, input_forget=1)


def embedding_bag(outdir):
    """nn.EmbeddingBag(mode="mean") as torch 1.13 exports it: a Loop over
    the bags."""
    import torch

    class Bag(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = torch.nn.EmbeddingBag(10, 4, mode="mean")

        def forward(self, ids):
            return self.bag(ids).sum()

    torch.manual_seed(0)
    torch.onnx.export(Bag(), (torch.randint(0, 10, (3, 5)),),
                      os.path.join(outdir, "embedding_bag.onnx"),
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17,
                      input_names=["ids"], output_names=["loss"])


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, fn in MODELS.items():
        m = fn()
        check(m, name)
        save(m, outdir, name + ".onnx")
    if "--torch" in sys.argv[2:]:
        embedding_bag(outdir)
    print("wrote %d models to %s" % (len(MODELS), outdir))


if __name__ == "__main__":
    main()

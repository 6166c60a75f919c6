#!/usr/bin/python3
"""Build small recurrent models (ONNX LSTM, GRU, RNN) for the importer tests.

Usage:
    /usr/bin/python3 test/Import/ONNX/Inputs/make_recurrent_models.py OUTDIR \
        [--torch] [--node-tests DIR]

`recurrent.test` runs it into its temporary directory. One node per model,
tiny sizes (T=3, batch 2, hidden 2), with the inputs and attributes the
converter must handle: all of LSTM's inputs (B, initial_h, initial_c,
peepholes P, a constant sequence_lens equal to T) bidirectional; GRU with
linear_before_reset 0 and 1; RNN reverse with Relu and batch-major layout;
and models that must be rejected (run-time and short sequence_lens, an
activation eff does not unroll, input_forget, a sequence too long to
unroll). Every model passes `onnx.checker.check_model(full_check=True)`
and strict shape inference.
With --torch, also exports nn.EmbeddingBag as torch 1.13 does (a Loop),
which the importer refuses with a workaround. With --node-tests DIR, also
writes the valid models as ONNX node tests (DIR/test_recurrent_NAME with
random inputs and the outputs of a numpy reference written from the ONNX
operator specification). Needs Debian's python3-onnx (1.12) and numpy
(python3-torch for --torch).
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


@model
def gru_bidirectional_batchwise():
    return recurrent("gru_bidirectional_batchwise", "GRU", 3, directions=2,
                     layout=1, states=("initial_h",), direction="bidirectional",
                     clip=0.5)


VALID = set(MODELS)


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
def rnn_too_long():
    g = Graph("rnn_too_long")
    x = g.input("X", F, [5000, 1, 1])
    g.op("RNN", [x, g.param("W", [1, 1, 1]), g.param("R", [1, 1, 1])],
         outputs=["", "Y_h"], name="/rnn/RNN", hidden_size=1)
    g.output("Y_h", F, [1, 1, 1])
    return g.model()


@model
def lstm_input_forget():
    return recurrent("lstm_input_forget", "LSTM", 4, input_forget=1)


# --------------------------------------------------------------------------
# ONNX's semantics in numpy, written from the operator specification, for
# node-test folders (--node-tests): the forward numerics of the options
# torch never exports (reverse, clip, peepholes, layout, GRU reset before
# linear) are checked against them by onnx-recurrent-forward.test.
# --------------------------------------------------------------------------

ACTIVATIONS = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
               "relu": lambda v: np.maximum(v, 0)}


def reference(m, feeds):
    """Y, Y_h (, Y_c) of the one recurrent node of `m` on `feeds`."""
    from onnx import helper, numpy_helper
    node = m.graph.node[-1]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    values = {t.name: numpy_helper.to_array(t).astype(np.float64)
              for t in m.graph.initializer}
    values.update({k: v.astype(np.float64) for k, v in feeds.items()})
    get = lambda i: (values[node.input[i]] if i < len(node.input)
                     and node.input[i] in values else None)
    op, hidden = node.op_type, attrs["hidden_size"]
    layout, clip = attrs.get("layout", 0), attrs.get("clip")
    direction = attrs.get("direction", b"forward").decode()
    lbr = attrs.get("linear_before_reset", 0)
    X, W, R, Bias = get(0), get(1), get(2), get(3)
    h0, c0, P = get(5), get(6), get(7)
    if layout:
        X = X.swapaxes(0, 1)
        h0 = None if h0 is None else h0.swapaxes(0, 1)
        c0 = None if c0 is None else c0.swapaxes(0, 1)
    dirs, (T, batch) = W.shape[0], X.shape[:2]
    names = [a.decode().lower() for a in attrs.get("activations", [])] or {
        "RNN": ["tanh"], "GRU": ["sigmoid", "tanh"],
        "LSTM": ["sigmoid", "tanh", "tanh"]}[op] * dirs
    Y = np.zeros((T, dirs, batch, hidden))
    Yh, Yc = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        acts = [ACTIVATIONS[n] for n in names[d * len(names) // dirs:
                                              (d + 1) * len(names) // dirs]]
        f = lambda k, v: acts[k](v if clip is None else np.clip(v, -clip, clip))
        gates = W.shape[1]
        Wb, Rb = ((Bias[d][:gates], Bias[d][gates:]) if Bias is not None
                  else (np.zeros(gates), np.zeros(gates)))
        h = np.zeros((batch, hidden)) if h0 is None else h0[d]
        c = np.zeros((batch, hidden)) if c0 is None else c0[d]
        split = lambda v: np.split(v, gates // hidden, axis=-1)
        steps = range(T - 1, -1, -1) if (direction == "reverse" or d == 1) \
            else range(T)
        for t in steps:
            x = X[t] @ W[d].T + Wb
            if op == "RNN":
                h = f(0, x + h @ R[d].T + Rb)
            elif op == "LSTM":
                i, o, fg, cc = split(x + h @ R[d].T + Rb)
                p = np.split(P[d], 3) if P is not None else [0, 0, 0]
                i, fg = f(0, i + p[0] * c), f(0, fg + p[2] * c)
                c = fg * c + i * f(1, cc)
                h = f(0, o + p[1] * c) * f(2, c)
            else:
                xz, xr, xh = split(x)
                Rz, Rr, Rh = np.split(R[d], 3)
                Rbz, Rbr, Rbh = split(Rb)
                z = f(0, xz + h @ Rz.T + Rbz)
                r = f(0, xr + h @ Rr.T + Rbr)
                n = f(1, xh + r * (h @ Rh.T + Rbh) if lbr
                      else xh + (r * h) @ Rh.T + Rbh)
                h = (1 - z) * n + z * h
            Y[t, d] = h
        Yh[d], Yc[d] = h, c
    if layout:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.swapaxes(0, 1), Yc.swapaxes(0, 1)
    return {"Y": Y, "Y_h": Yh, "Y_c": Yc}


def write_node_test(m, name, folder):
    """`folder`/test_recurrent_NAME as ONNX's node tests are laid out."""
    from onnx import numpy_helper
    rng = np.random.RandomState(7)
    test = os.path.join(folder, "test_recurrent_" + name)
    data = os.path.join(test, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    save(m, test, "model.onnx")
    feeds = {}
    for k, vi in enumerate(m.graph.input):
        shape = [dim.dim_value for dim in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.randn(*shape).astype(np.float32)
        with open(os.path.join(data, "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(feeds[vi.name],
                                            vi.name).SerializeToString())
    want = reference(m, feeds)
    for k, vo in enumerate(m.graph.output):
        with open(os.path.join(data, "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(
                want[vo.name].astype(np.float32), vo.name).SerializeToString())


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
    node_tests = None
    if "--node-tests" in sys.argv[2:]:
        node_tests = sys.argv[sys.argv.index("--node-tests") + 1]
    for name, fn in MODELS.items():
        m = fn()
        check(m, name)
        save(m, outdir, name + ".onnx")
        if node_tests and name in VALID:
            write_node_test(m, name, node_tests)
    if "--torch" in sys.argv[2:]:
        embedding_bag(outdir)
    print("wrote %d models to %s" % (len(MODELS), outdir))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Writes a LLaMA-shaped ONNX training graph (forward + loss), built node by
node with onnx.helper: no PyTorch, and no weight is ever materialised unless
asked for.

    /usr/bin/python3 examples/llama/make_llama_onnx.py --config 7b \\
        --batch 1 --seq 512 -o llama7b.onnx
    effc llama7b.onnx --shapes-only --report          # will it fit?

    /usr/bin/python3 examples/llama/make_llama_onnx.py --config tiny \\
        --weights random -o tiny.onnx                  # real weights
    effc tiny.onnx -o tiny.effx

The graph is Hugging Face's LlamaForCausalLM(input_ids, labels=labels):

- inputs `input_ids` and `labels`, int64 [batch, seq]; output `loss`, the
  mean cross-entropy of the logits at positions 0..seq-2 against the labels
  at 1..seq-1 (the shift is inside the graph; label -100 is ignored). With
  `--labels next` the labels are already the next tokens (effrun's `.bin`
  token windows) and every position counts.
- token embedding (Gather), then per layer: RMSNorm, q/k/v projections,
  rotary embeddings (rotate_half form, base 10000), causal softmax
  attention over all heads, o projection, residual; RMSNorm, SwiGLU MLP
  (down(silu(gate(x)) * up(x))), residual. Final RMSNorm, LM head (not tied).
- parameters named as in Hugging Face's state_dict
  (`model.layers.0.self_attn.q_proj.weight`, ...), in torch's [out, in]
  layout; a projection is Reshape to 2-D, Gemm(transB=1), Reshape back, as
  torch exports nn.Linear (the weight is never transposed).
- node names are torch-style scopes (`/model/layers.3/mlp/down_proj/Gemm`),
  so `effc --remat full` finds one block per layer.
- the rotary tables and the causal mask are Constant nodes (eff constants),
  not initializers: they are not parameters.

Weights (float32):
- `--weights none` (the default): every initializer is an external-data
  reference into OUT.data, which is not written (a 7B model's 27 GB); plan
  it with `effc --shapes-only`.
- `--weights random --seed S`: N(0, 0.02) projections and embeddings, unit
  norm weights, written to OUT.data (64-byte aligned), or inside the .onnx
  with `--inline`.

write_model() is the same from Python (the tests pass PyTorch's weights).
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

OPSET = 17

CONFIGS = {
    # LLaMA-7B (Touvron et al. 2023; Hugging Face's config of llama-7b).
    "7b": dict(layers=32, dim=4096, heads=32, hidden=11008, vocab=32000),
    "13b": dict(layers=40, dim=5120, heads=40, hidden=13824, vocab=32000),
    # Small enough to train in a test.
    "tiny": dict(layers=2, dim=32, heads=4, hidden=64, vocab=64),
}


def parameter_shapes(cfg):
    """[(name, shape)] of every parameter, in Hugging Face's state_dict
    order."""
    d, f, v = cfg["dim"], cfg["hidden"], cfg["vocab"]
    shapes = [("model.embed_tokens.weight", [v, d])]
    for i in range(cfg["layers"]):
        p = "model.layers.%d." % i
        shapes += [(p + "self_attn.q_proj.weight", [d, d]),
                   (p + "self_attn.k_proj.weight", [d, d]),
                   (p + "self_attn.v_proj.weight", [d, d]),
                   (p + "self_attn.o_proj.weight", [d, d]),
                   (p + "mlp.gate_proj.weight", [f, d]),
                   (p + "mlp.up_proj.weight", [f, d]),
                   (p + "mlp.down_proj.weight", [d, f]),
                   (p + "input_layernorm.weight", [d]),
                   (p + "post_attention_layernorm.weight", [d])]
    shapes += [("model.norm.weight", [d]), ("lm_head.weight", [v, d])]
    return shapes


def rotary_tables(seq, head_dim, base=10000.0):
    """(cos, sin), float32 [seq, head_dim], computed in float32 as Hugging
    Face's LlamaRotaryEmbedding does."""
    inv_freq = (1.0 / (np.float32(base) ** (
        np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)))
    ).astype(np.float32)
    t = np.arange(seq, dtype=np.float32)
    freqs = np.outer(t, inv_freq).astype(np.float32)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def random_weights(cfg, seed):
    rng = np.random.RandomState(seed)
    out = {}
    for name, shape in parameter_shapes(cfg):
        if len(shape) == 1:
            out[name] = np.ones(shape, dtype=np.float32)
        else:
            out[name] = (0.02 * rng.randn(*shape)).astype(np.float32)
    return out


class Graph:
    """Nodes under torch-style scope names, and the constants they need."""

    def __init__(self):
        self.nodes = []
        self.counter = {}

    def op(self, op_type, inputs, scope, n_out=1, **attrs):
        base = scope + "/" + op_type
        k = self.counter.get(base, 0)
        self.counter[base] = k + 1
        name = base if k == 0 else "%s_%d" % (base, k)
        outs = [name + "_output_%d" % i for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name,
                                           **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, array, scope, name):
        out = scope + "/" + name
        self.nodes.append(helper.make_node(
            "Constant", [], [out], name=out + "/Constant",
            value=numpy_helper.from_array(np.asarray(array), out)))
        return out


def build_graph(cfg, batch, seq, labels="shifted", eps=1e-6,
                dynamic_batch=False):
    """The GraphProto without initializers."""
    d, heads, f, v = cfg["dim"], cfg["heads"], cfg["hidden"], cfg["vocab"]
    assert d % heads == 0 and (d // heads) % 2 == 0, "head_dim must be even"
    hd = d // heads
    B, S = batch, seq
    g = Graph()
    i64 = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731

    # Shared constants.
    # -1 for the batch: the same graph serves any batch (--dynamic-batch).
    shape_2d = g.const(i64([-1, d]), "/model", "shape_tokens")
    shape_3d = g.const(i64([-1, S, d]), "/model", "shape_hidden")
    shape_heads = g.const(i64([-1, S, heads, hd]), "/model", "shape_heads")
    two = g.const(np.float32(2.0), "/model", "two")
    epsilon = g.const(np.float32(eps), "/model", "eps")
    one = g.const(np.float32(1.0), "/model", "one")
    scale = g.const(np.float32(1.0 / math.sqrt(hd)), "/model", "scale")
    cos, sin = rotary_tables(S, hd)
    cos = g.const(cos, "/model/rotary_emb", "cos")
    sin = g.const(sin, "/model/rotary_emb", "sin")
    causal = g.const(np.tril(np.ones((S, S), dtype=bool)), "/model", "causal")
    neg_inf = g.const(np.float32(-np.inf), "/model", "neg_inf")
    half_lo = [g.const(i64([0]), "/model/rotary_emb", "lo_start"),
               g.const(i64([hd // 2]), "/model/rotary_emb", "lo_end")]
    half_hi = [g.const(i64([hd // 2]), "/model/rotary_emb", "hi_start"),
               g.const(i64([hd]), "/model/rotary_emb", "hi_end")]
    last = g.const(i64([-1]), "/model/rotary_emb", "axis")

    def linear(x2d, weight, scope):
        return g.op("Gemm", [x2d, weight], scope, transB=1)

    def rms_norm(x, weight, scope):
        var = g.op("ReduceMean", [g.op("Pow", [x, two], scope)], scope,
                   axes=[-1], keepdims=1)
        rstd = g.op("Div", [one, g.op("Sqrt", [g.op("Add", [var, epsilon],
                                                    scope)], scope)], scope)
        return g.op("Mul", [weight, g.op("Mul", [x, rstd], scope)], scope)

    def rotate(x, scope):
        """x * cos + rotate_half(x) * sin, x: [B, heads, S, hd]."""
        lo = g.op("Slice", [x] + half_lo + [last], scope)
        hi = g.op("Slice", [x] + half_hi + [last], scope)
        rotated = g.op("Concat", [g.op("Neg", [hi], scope), lo], scope, axis=-1)
        return g.op("Add", [g.op("Mul", [x, cos], scope),
                            g.op("Mul", [rotated, sin], scope)], scope)

    def heads_of(x2d, scope):
        x = g.op("Reshape", [x2d, shape_heads], scope)
        return g.op("Transpose", [x], scope, perm=[0, 2, 1, 3])

    h = g.op("Gather", ["model.embed_tokens.weight", "input_ids"],
             "/model/embed_tokens")
    for i in range(cfg["layers"]):
        s = "/model/layers.%d" % i
        p = "model.layers.%d." % i
        x = rms_norm(h, p + "input_layernorm.weight", s + "/input_layernorm")
        x = g.op("Reshape", [x, shape_2d], s + "/self_attn")
        q = heads_of(linear(x, p + "self_attn.q_proj.weight",
                            s + "/self_attn/q_proj"), s + "/self_attn")
        k = heads_of(linear(x, p + "self_attn.k_proj.weight",
                            s + "/self_attn/k_proj"), s + "/self_attn")
        val = heads_of(linear(x, p + "self_attn.v_proj.weight",
                              s + "/self_attn/v_proj"), s + "/self_attn")
        q = rotate(q, s + "/self_attn/rotary_q")
        k = rotate(k, s + "/self_attn/rotary_k")
        kt = g.op("Transpose", [k], s + "/self_attn", perm=[0, 1, 3, 2])
        scores = g.op("Mul", [g.op("MatMul", [q, kt], s + "/self_attn"), scale],
                      s + "/self_attn")
        scores = g.op("Where", [causal, scores, neg_inf], s + "/self_attn")
        probs = g.op("Softmax", [scores], s + "/self_attn", axis=-1)
        o = g.op("MatMul", [probs, val], s + "/self_attn")
        o = g.op("Transpose", [o], s + "/self_attn", perm=[0, 2, 1, 3])
        o = g.op("Reshape", [o, shape_2d], s + "/self_attn")
        o = linear(o, p + "self_attn.o_proj.weight", s + "/self_attn/o_proj")
        h = g.op("Add", [h, g.op("Reshape", [o, shape_3d], s + "/self_attn")], s)
        x = rms_norm(h, p + "post_attention_layernorm.weight",
                     s + "/post_attention_layernorm")
        x = g.op("Reshape", [x, shape_2d], s + "/mlp")
        gate = linear(x, p + "mlp.gate_proj.weight", s + "/mlp/gate_proj")
        up = linear(x, p + "mlp.up_proj.weight", s + "/mlp/up_proj")
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate], s + "/mlp/act_fn")],
                   s + "/mlp/act_fn")
        down = linear(g.op("Mul", [act, up], s + "/mlp"),
                      p + "mlp.down_proj.weight", s + "/mlp/down_proj")
        h = g.op("Add", [h, g.op("Reshape", [down, shape_3d], s + "/mlp")], s)
    h = rms_norm(h, "model.norm.weight", "/model/norm")

    # The shifted loss: position t predicts label t+1. The hidden states
    # are cut before the LM head (the same loss as Hugging Face's slice of
    # the logits, without their [B, S, vocab] copy).
    if labels == "shifted":
        T = S - 1
        h = g.op("Slice", [h, g.const(i64([0]), "/loss", "h_start"),
                           g.const(i64([T]), "/loss", "h_end"),
                           g.const(i64([1]), "/loss", "h_axis")], "/loss")
        targets = g.op("Slice", ["labels", g.const(i64([1]), "/loss", "y_start"),
                                 g.const(i64([S]), "/loss", "y_end"),
                                 g.const(i64([1]), "/loss", "y_axis")], "/loss")
    else:
        T = S
        targets = "labels"
    h = g.op("Reshape", [h, g.const(i64([-1, d]), "/loss", "shape_h")],
             "/lm_head")
    logits = linear(h, "lm_head.weight", "/lm_head")
    targets = g.op("Reshape", [targets, g.const(i64([-1]), "/loss",
                                                "shape_y")], "/loss")
    g.nodes.append(helper.make_node(
        "SoftmaxCrossEntropyLoss", [logits, targets], ["loss"],
        name="/loss/SoftmaxCrossEntropyLoss", reduction="mean",
        ignore_index=-100))

    batch_dim = "batch" if dynamic_batch else B
    inputs = [helper.make_tensor_value_info("input_ids", TP.INT64, [batch_dim, S]),
              helper.make_tensor_value_info("labels", TP.INT64, [batch_dim, S])]
    outputs = [helper.make_tensor_value_info("loss", TP.FLOAT, [])]
    return helper.make_graph(g.nodes, "llama", inputs, outputs)


def external_initializer(name, shape, location, offset):
    """A float32 initializer whose data is `length` bytes at `offset` of
    `location` (relative to the model)."""
    t = TP()
    t.name = name
    t.data_type = TP.FLOAT
    t.dims.extend(shape)
    t.data_location = TP.EXTERNAL
    nbytes = int(np.prod(shape, dtype=np.int64)) * 4
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(nbytes))):
        e = t.external_data.add()
        e.key, e.value = key, value
    return t, nbytes


def write_model(path, cfg, batch, seq, weights=None, inline=False,
                labels="shifted", eps=1e-6, dynamic_batch=False):
    """Writes the graph to `path`. weights: None (external references to
    PATH.data, which is not written) or {name: float32 array} (written to
    PATH.data, or into the .onnx with inline=True). Returns the parameter
    count."""
    graph = build_graph(cfg, batch, seq, labels=labels, eps=eps,
                        dynamic_batch=dynamic_batch)
    location = os.path.basename(path) + ".data"
    count = 0
    data = None
    if weights is not None and not inline:
        data = open(path + ".data", "wb")
    try:
        offset = 0
        for name, shape in parameter_shapes(cfg):
            count += int(np.prod(shape, dtype=np.int64))
            if weights is not None and inline:
                graph.initializer.append(numpy_helper.from_array(
                    np.ascontiguousarray(weights[name], dtype=np.float32), name))
                continue
            t, nbytes = external_initializer(name, shape, location, offset)
            graph.initializer.append(t)
            if data is not None:
                array = np.ascontiguousarray(weights[name], dtype=np.float32)
                assert list(array.shape) == list(shape), (name, array.shape)
                data.seek(offset)
                data.write(array.tobytes())
            offset += (nbytes + 63) // 64 * 64
    finally:
        if data is not None:
            data.close()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="effopt make_llama_onnx.py")
    model.ir_version = 8
    onnx.save_model(model, path)
    if weights is not None:
        onnx.checker.check_model(path)  # with its data file
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="7b",
                    help="7b, 13b, tiny, or 'custom' (then give every "
                         "dimension)")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--dim", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--hidden", type=int, help="SwiGLU hidden size")
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--dynamic-batch", action="store_true",
                    help="the inputs' batch dimension is the symbol 'batch' "
                         "(bind it with effc --shape input_ids=B,SEQ --shape "
                         "labels=B,SEQ; lets --memory-budget split it)")
    ap.add_argument("--labels", choices=["shifted", "next"], default="shifted",
                    help="shifted: labels are the input ids, shifted inside "
                         "the graph (Hugging Face); next: labels are already "
                         "the next tokens (effrun's .bin windows)")
    ap.add_argument("--eps", type=float, default=1e-6, help="RMSNorm epsilon")
    ap.add_argument("--weights", choices=["none", "random"], default="none")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inline", action="store_true",
                    help="--weights random: store them in the .onnx")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    if args.config == "custom":
        cfg = {}
    elif args.config in CONFIGS:
        cfg = dict(CONFIGS[args.config])
    else:
        sys.exit("make_llama_onnx.py: unknown --config %s" % args.config)
    for key in ("layers", "dim", "heads", "hidden", "vocab"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
        if key not in cfg:
            sys.exit("make_llama_onnx.py: --config custom needs --%s" % key)
    if cfg["dim"] % cfg["heads"] or (cfg["dim"] // cfg["heads"]) % 2:
        sys.exit("make_llama_onnx.py: dim %d is not heads %d times an even "
                 "head size" % (cfg["dim"], cfg["heads"]))
    weights = random_weights(cfg, args.seed) if args.weights == "random" else None
    count = write_model(args.out, cfg, args.batch, args.seq, weights=weights,
                        inline=args.inline, labels=args.labels, eps=args.eps,
                        dynamic_batch=args.dynamic_batch)
    where = ("no data file (plan it with effc --shapes-only)" if weights is None
             else "weights inline" if args.inline else
             "weights in %s.data" % args.out)
    print("%s: LLaMA %d layers, d %d, %d heads, SwiGLU %d, vocab %d, "
          "batch %d x seq %d: %d parameters (%.2f GB fp32), %s" % (
              args.out, cfg["layers"], cfg["dim"], cfg["heads"], cfg["hidden"],
              cfg["vocab"], args.batch, args.seq, count, count * 4 / 1e9, where))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Export the effopt example training graphs (loss inside the graph) to ONNX.

Usage:
    /usr/bin/python3 examples/export_examples.py [--out DIR] [--models mlp,cnn,gpt]

For each model NAME this writes:
    DIR/NAME.onnx  the training graph, exported by torch.onnx.export with
                   training=TrainingMode.TRAINING, do_constant_folding=False,
                   opset 17, static shapes (with --dynamic-batch the leading
                   dimension of inputs and outputs is the symbol "batch");
                   first output is the scalar loss.
    DIR/NAME.npz   one array per ONNX graph input; step i uses rows
                   [i*B, (i+1)*B) (enough rows for --steps steps, default 200).
    DIR/NAME.json  batch size, inputs (name/shape/dtype), parameters (float
                   initializers, with shapes), buffers, ONNX op types used,
                   description, and the PyTorch loss of step 0 (train mode;
                   only deterministic models, i.e. without dropout).

Needs Debian's python3-torch (1.13), python3-onnx, python3-numpy and
python3-sklearn: run with /usr/bin/python3.
"""
import argparse
import io
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.shape_inference
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 17


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def digits_data():
    """sklearn digits: (X float32 [N,64] standardised, y int64 [N])."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = d.data.astype(np.float64)
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std[std == 0] = 1.0
    x = ((x - mean) / std).astype(np.float32)
    return x, d.target.astype(np.int64)


def epoch_rows(n_avail, n_rows, seed):
    """Row indices for n_rows rows: concatenated shuffled epochs."""
    rng = np.random.RandomState(seed)
    idx = []
    while sum(len(i) for i in idx) < n_rows:
        idx.append(rng.permutation(n_avail))
    return np.concatenate(idx)[:n_rows]


def text_bytes(verses="Gen1:1-Exo40:38"):
    """A real text as bytes: `verses` of the KJV bible (Debian bible-kjv),
    or the GPL-3 where bible-kjv is missing."""
    bible = "/usr/bin/bible"
    if os.path.exists(bible) and os.path.exists("/usr/lib/bible.data"):
        try:
            out = subprocess.run(
                [bible, "-f", verses], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                timeout=30, check=True).stdout
            # drop the "Ge1:1 " verse references
            lines = [re.sub(rb"^\S+\d+:\d+ ", b"", l)
                     for l in out.splitlines() if l.strip()]
            data = b"\n".join(lines) + b"\n"
            if len(data) > 100000:
                return data, ("King James Bible %s (Debian bible-kjv, /usr/bin/bible)"
                             % verses)
        except (OSError, subprocess.SubprocessError):
            pass
    for p in ("/usr/share/common-licenses/GPL-3",):
        if os.path.exists(p):
            with open(p, "rb") as f:
                return f.read(), p
    raise SystemExit("export_examples.py: no text found for the gpt example "
                     "(install bible-kjv or base-files)")


# --------------------------------------------------------------------------
# Models (forward takes the whole batch, returns the loss first)
# --------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 128), nn.ReLU(),
            nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 10))
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        logits = self.net(x)
        return self.loss_fn(logits, y), logits


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),                                   # 8x8 -> 4x4
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AvgPool2d(3, stride=2, padding=1),              # 4x4 -> 2x2
            nn.Flatten())
        self.fc = nn.Linear(32 * 2 * 2, 10)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        logits = self.fc(self.features(x))
        return self.loss_fn(logits, y), logits


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, block_size, dropout):
        super().__init__()
        assert d_model % n_head == 0
        self.n_head = n_head
        self.d_model = d_model
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        # Boolean causal mask.  A *bool* buffer (not the float tril of
        # nanoGPT) so that it becomes a bool initializer and is not mistaken
        # for a trainable float parameter.
        self.register_buffer(
            "mask", torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
            .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.d_model, dim=2)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_drop(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, d_model, n_head, block_size, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, block_size, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(),
            nn.Linear(4 * d_model, d_model), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab=256, block_size=32, n_layer=2, d_model=64,
                 n_head=4, dropout=0.1):
        super().__init__()
        self.vocab = vocab
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block_size, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            [Block(d_model, n_head, block_size, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tok.weight          # weight tying
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(pos))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return loss, logits


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

def make_mlp(steps):
    B = 32
    x, y = digits_data()
    rows = epoch_rows(len(x), steps * B, seed=0)
    data = {"x": x[rows], "y": y[rows]}
    return dict(model=MLP(), batch=B, data=data,
                output_names=["loss", "logits"], deterministic=True,
                description="MLP 64-128-64-10 (ReLU) classifier on sklearn "
                            "load_digits (standardised features), "
                            "nn.CrossEntropyLoss (mean).")


def make_cnn(steps):
    B = 32
    x, y = digits_data()
    rows = epoch_rows(len(x), steps * B, seed=1)
    data = {"x": x[rows].reshape(-1, 1, 8, 8), "y": y[rows]}
    return dict(model=CNN(), batch=B, data=data,
                output_names=["loss", "logits"], deterministic=True,
                description="CNN on sklearn digits as 1x8x8 images (standardised): "
                            "Conv3x3(1->16)+BN+ReLU, MaxPool2, Conv3x3(16->32)+BN+ReLU, "
                            "AvgPool2d(3,2,1), Flatten, Linear(128->10), "
                            "nn.CrossEntropyLoss (mean). BatchNorm in training "
                            "mode (running stats are buffers).")


def make_gpt(steps):
    B, T = 8, 32
    text, source = text_bytes()
    tokens = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    rng = np.random.RandomState(2)
    starts = rng.randint(0, len(tokens) - T - 1, size=steps * B)
    win = starts[:, None] + np.arange(T)[None, :]
    data = {"idx": tokens[win], "targets": tokens[win + 1]}
    return dict(model=GPT(vocab=256, block_size=T), batch=B, data=data,
                output_names=["loss", "logits"], deterministic=False,
                extra={"vocab_size": 256, "block_size": T, "n_layer": 2,
                       "d_model": 64, "n_head": 4, "dropout": 0.1,
                       "text_source": source, "text_bytes": len(text),
                       "tied_weights": {"head.weight": "tok.weight"}},
                description="Byte-level GPT (vocab 256, 2 pre-LN layers, d_model 64, "
                            "4 heads, seq 32): token + learned position embeddings, "
                            "causal self-attention (bool tril buffer, masked_fill -inf), "
                            "GELU (erf) MLP, dropout 0.1, final LayerNorm, LM head "
                            "tied to the token embedding, F.cross_entropy (mean). "
                            "Data: random windows of a real text, as bytes.")


MAKERS = {"mlp": make_mlp, "cnn": make_cnn, "gpt": make_gpt}

NP2ONNX = {np.dtype("float32"): "float32", np.dtype("int64"): "int64"}


def op_types(model):
    ops = set()

    def walk(g):
        for n in g.node:
            ops.add(n.op_type if n.domain in ("", "ai.onnx") else n.domain + "." + n.op_type)
            for a in n.attribute:
                if a.g is not None and a.HasField("g"):
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(model.graph)
    return sorted(ops)


def export_one(name, out_dir, steps, dynamic_batch=False):
    t0 = time.time()
    torch.manual_seed(0)
    np.random.seed(0)
    spec = MAKERS[name](steps)
    model, B, data = spec["model"], spec["batch"], spec["data"]
    input_names = list(data.keys())
    batch0 = tuple(torch.from_numpy(np.ascontiguousarray(data[k][:B])) for k in input_names)

    # Loss of step 0 in PyTorch (train mode, before any update), for
    # deterministic models only (dropout makes the gpt loss random).
    model.train()
    state_before = {k: v.clone() for k, v in model.state_dict().items()}
    torch_loss0 = None
    if spec["deterministic"]:
        with torch.no_grad():
            torch_loss0 = float(model(*batch0)[0])
        model.load_state_dict(state_before)   # undo BN running-stat updates

    onnx_path = os.path.join(out_dir, name + ".onnx")
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, batch0, f,
            training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False,
            opset_version=OPSET,
            input_names=input_names,
            output_names=spec["output_names"],
            # The leading dimension of every input and output as the
            # symbol "batch": effc binds it with --shape, and
            # --memory-budget can then choose a micro-batch.
            dynamic_axes=({n: {0: "batch"} for n in
                           input_names + spec["output_names"][1:]}
                          if dynamic_batch else None))
    m = onnx.load_from_string(f.getvalue())
    # torch.onnx.export traces the model in train mode, i.e. runs forward
    # once: BatchNorm running statistics in the exported initializers are
    # the *updated* ones.  Put the initial state back, both in the module and
    # in the ONNX initializers, and check every initializer is the state_dict
    # entry of the same name.
    model.load_state_dict(state_before)
    restored = []
    for t in m.graph.initializer:
        if t.name not in state_before:
            raise SystemExit("export_examples.py: %s: initializer %r is not in the "
                             "state_dict" % (name, t.name))
        want = state_before[t.name].numpy()
        have = onnx.numpy_helper.to_array(t)
        if have.shape != want.shape or have.dtype != want.dtype:
            raise SystemExit("export_examples.py: %s: initializer %r has shape/dtype "
                             "%s/%s, state_dict %s/%s" % (name, t.name, have.shape,
                                                         have.dtype, want.shape, want.dtype))
        if not np.array_equal(have, want):
            t.CopyFrom(onnx.numpy_helper.from_array(np.ascontiguousarray(want), t.name))
            restored.append(t.name)
    onnx.checker.check_model(m, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    loss_vi = [v for v in list(inferred.graph.output) if v.name == m.graph.output[0].name]
    if loss_vi and loss_vi[0].type.tensor_type.shape.dim:
        raise SystemExit("export_examples.py: %s: first output is not a scalar" % name)
    onnx.save_model(m, onnx_path)

    np.savez(os.path.join(out_dir, name + ".npz"), **data)

    inits = {t.name: t for t in m.graph.initializer}
    params, buffers = [], []
    bn_state = set()
    for n in m.graph.node:
        if n.op_type == "BatchNormalization" and len(n.input) == 5:
            bn_state.update(n.input[3:5])
    for t in m.graph.initializer:
        entry = {"name": t.name, "shape": list(t.dims),
                 "dtype": onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type].name}
        if t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                           onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE) \
                and t.name not in bn_state:
            params.append(entry)
        else:
            buffers.append(entry)
    n_params = int(sum(np.prod(p["shape"]) for p in params))
    ops = op_types(m)
    info = {
        "name": name,
        "description": spec["description"],
        "onnx": name + ".onnx",
        "data": name + ".npz",
        "batch_size": B,
        "steps_in_data": steps,
        "opset": [{"domain": o.domain, "version": o.version} for o in m.opset_import],
        "torch_version": torch.__version__,
        "onnx_version": onnx.__version__,
        "inputs": [{"name": k, "shape": [B] + list(data[k].shape[1:]),
                    "dtype": NP2ONNX[data[k].dtype]} for k in input_names],
        "outputs": [o.name for o in m.graph.output],
        "parameters": params,
        "num_parameters": n_params,
        "buffers": buffers,
        "op_types": ops,
        "num_nodes": len(m.graph.node),
        "torch_loss_step0": torch_loss0,
        "initializers_reset_after_export": restored,
    }
    info.update(spec.get("extra", {}))
    with open(os.path.join(out_dir, name + ".json"), "w") as fh:
        json.dump(info, fh, indent=2)
        fh.write("\n")
    dt = time.time() - t0
    print("%s: %d nodes, %d params in %d initializers (%d buffers), opset %s, "
          "%.1fs\n  ops: %s" % (
              name, len(m.graph.node), n_params, len(params), len(buffers),
              ",".join("%s%d" % (o.domain or "ai.onnx:", o.version) for o in m.opset_import),
              dt, " ".join(ops)))
    return ops


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "out"))
    ap.add_argument("--models", default=",".join(MAKERS))
    ap.add_argument("--steps", type=int, default=200,
                    help="number of batches written to each .npz (default 200)")
    ap.add_argument("--dynamic-batch", action="store_true",
                    help="export the batch dimension as the symbol 'batch' "
                         "(bind it with effc --shape NAME=B,...)")
    args = ap.parse_args()
    names = [s for s in args.models.split(",") if s]
    bad = [s for s in names if s not in MAKERS]
    if bad:
        ap.error("unknown model(s) %s; choose from %s" % (",".join(bad), ",".join(MAKERS)))
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    all_ops = set()
    for n in names:
        all_ops.update(export_one(n, args.out, args.steps, args.dynamic_batch))
    print("all op types: " + " ".join(sorted(all_ops)))


if __name__ == "__main__":
    main()

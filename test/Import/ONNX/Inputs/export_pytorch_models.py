#!/usr/bin/python3
"""Export a zoo of small PyTorch training graphs to ONNX, the ordinary way.

Usage:
    /usr/bin/python3 test/Import/ONNX/Inputs/export_pytorch_models.py OUTDIR [--only NAME,...]

Every model is a `torch.nn.Module` whose forward computes the loss, exported
as a user would export it:

    torch.onnx.export(model, args, f, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=13..17)

so the first graph output is the scalar loss, float initializers are the
state_dict (parameters *and* float buffers), and graph inputs are the batch.
Each model passes `onnx.checker.check_model(full_check=True)`.

OUTDIR receives NAME.onnx for every model and `models.txt`, one line per
model: `NAME OPSET WHAT-IT-EXERCISES`. A module torch 1.13 itself cannot
export is listed as `NAME - not exportable by torch 1.13: REASON`.

The importer lit test `pytorch-exports.test` runs this script and imports
every model. Needs Debian's python3-torch (1.13), python3-onnx, numpy; runs
in well under 40 s on 2 cores.
"""
import argparse
import io
import math
import os
import sys
import warnings

import onnx
import onnx.checker
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "examples"))
from export_examples import GPT  # noqa: E402  (the example GPT, unchanged)

B = 4  # batch size of every model


# --------------------------------------------------------------------------
# Transformers
# --------------------------------------------------------------------------

class GPTLoss(nn.Module):
    """The example GPT (pre-LN blocks, bool tril mask, erf GELU, tied head)."""

    def __init__(self):
        super().__init__()
        self.gpt = GPT(vocab=64, block_size=16, n_layer=1, d_model=32, n_head=2)

    def forward(self, idx, targets):
        return self.gpt(idx, targets)


class NanoAttention(nn.Module):
    """nanoGPT's CausalSelfAttention: a FLOAT tril buffer named `bias`."""

    def __init__(self, d=32, h=4, t=16):
        super().__init__()
        self.n_head, self.d = h, d
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(self, x):
        Bn, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.d, dim=2)
        k = k.view(Bn, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(Bn, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(Bn, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(Bn, T, C)
        return self.c_proj(y)


class NanoGPT(nn.Module):
    def __init__(self, vocab=64, d=32, t=16, gelu="none"):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(t, d)
        self.ln_1 = nn.LayerNorm(d)
        self.attn = NanoAttention(d, 4, t)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.gelu = nn.GELU(approximate=gelu)
        self.c_proj = nn.Linear(4 * d, d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(self.ln_1(x))
        x = x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))
        logits = self.lm_head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class GeluTanh(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 5)

    def forward(self, x, y):
        return F.cross_entropy(self.fc2(F.gelu(self.fc1(x), approximate="tanh")), y)


class EncoderLayer(nn.Module):
    def __init__(self, norm_first=False, activation="relu"):
        super().__init__()
        self.emb = nn.Embedding(50, 32)
        self.layer = nn.TransformerEncoderLayer(
            d_model=32, nhead=4, dim_feedforward=64, dropout=0.1,
            batch_first=True, norm_first=norm_first, activation=activation)
        self.head = nn.Linear(32, 50)

    def forward(self, idx, targets):
        h = self.layer(self.emb(idx))
        return F.cross_entropy(self.head(h).transpose(1, 2), targets)


class MHACausal(nn.Module):
    def __init__(self, bool_mask=False):
        super().__init__()
        self.bool_mask = bool_mask
        self.proj = nn.Linear(16, 32)
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)
        self.head = nn.Linear(32, 3)

    def forward(self, x, y):
        T = x.size(1)
        if self.bool_mask:
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        else:
            mask = nn.Transformer.generate_square_subsequent_mask(T)
        h = self.proj(x)
        out, _ = self.mha(h, h, h, attn_mask=mask, need_weights=False)
        return F.cross_entropy(self.head(out.mean(1)), y)


# --------------------------------------------------------------------------
# CNNs
# --------------------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


class ResNetTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, 2, 1, ceil_mode=True)
        self.block = BasicBlock(8)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x, y):
        x = self.pool(F.relu(self.bn(self.stem(x))))
        x = self.block(x)
        return F.cross_entropy(self.fc(torch.flatten(self.avg(x), 1)), y)


class Pools(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.avg = nn.AvgPool2d(2, count_include_pad=False)
        self.avg_pad = nn.AvgPool2d(3, 2, 1, count_include_pad=False)
        self.fc = nn.Linear(4 * 2 * 2, 10)

    def forward(self, x, y):
        x = self.avg_pad(self.avg(F.relu(self.conv(x))))
        return F.cross_entropy(self.fc(x.flatten(1)), y)


class Conv1dBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 5, padding=2)
        self.bn = nn.BatchNorm1d(8)
        self.fc = nn.Linear(8, 3)

    def forward(self, x, y):
        h = F.relu(self.bn(self.conv(x)))
        return F.cross_entropy(self.fc(h.mean(2)), y)


class Dropout2dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.drop = nn.Dropout2d(0.1)
        self.fc = nn.Linear(4, 10)

    def forward(self, x, y):
        h = self.drop(F.relu(self.conv(x)))
        return F.cross_entropy(self.fc(h.mean((2, 3))), y)


# --------------------------------------------------------------------------
# MLP variants: one feature each, on x f32[B,16] and labels y i64[B]
# --------------------------------------------------------------------------

class MLPWith(nn.Module):
    """fc1 -> body(h) -> fc2 -> loss(logits, y)."""

    def __init__(self, body=None, loss=None, width=32, classes=5):
        super().__init__()
        self.fc1 = nn.Linear(16, width)
        self.fc2 = nn.Linear(width, classes)
        self.body = body or (lambda h: h)
        self.loss = loss or F.cross_entropy

    def forward(self, x, y):
        return self.loss(self.fc2(self.body(self.fc1(x))), y)


class Linear3D(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 5)

    def forward(self, x, y):          # x [B, 6, 16], y [B, 6]
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))).transpose(1, 2), y)


class EmbeddingPad(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16, padding_idx=0)
        self.fc = nn.Linear(16, 5)

    def forward(self, idx, y):        # idx [B, 6]
        h = self.emb(idx)
        return F.cross_entropy(self.fc(h[:, -1]), y)


class ShapeOps(nn.Module):
    """cat, stack, chunk, flatten, permute, expand, view(B, -1), x[:, -1]."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 24)
        self.fc2 = nn.Linear(2 * 3 * 8 + 8, 5)
        self.scale = nn.Parameter(torch.ones(1, 1, 8))

    def forward(self, x, y):
        h = self.fc1(x)                               # [B, 24]
        a, b, c = h.chunk(3, dim=1)                   # 3 x [B, 8]
        s = torch.stack([a, b, c], dim=1)             # [B, 3, 8]
        s = s * self.scale.expand(x.size(0), 3, 8)
        t = torch.cat([s, s.permute(0, 2, 1).flip(2).permute(0, 2, 1)], dim=1)  # [B, 6, 8]
        last = t[:, -1]                               # [B, 8]
        flat = t.view(x.size(0), 2, 3, 8).flatten(1)  # [B, 48]
        u = torch.cat([flat, last], dim=1).view(x.size(0), -1)
        return F.cross_entropy(self.fc2(u), y)


class MaskedOps(nn.Module):
    """torch.clamp, torch.where, masked_fill on activations."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 5)

    def forward(self, x, y):
        h = self.fc1(x)
        h = torch.clamp(h, -2.0, 2.0) + torch.clamp(h, min=0.5)
        h = torch.where(h > 0, h, h * 0.1)
        h = h.masked_fill(h < -1.0, 0.0)
        return F.cross_entropy(self.fc2(h), y)


class Stats(nn.Module):
    """x.mean(dim), x.var(dim), F.normalize."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 5)

    def forward(self, x, y):
        h = self.fc1(x)
        h = F.normalize(h, dim=1) + (h - h.mean(1, keepdim=True)) / (
            h.var(1, keepdim=True) + 1e-5).sqrt()
        return F.cross_entropy(self.fc2(h), y)


class MoreOps(nn.Module):
    """Ops beyond the common set: hardswish, mish, einsum, repeat, cumsum,
    logsumexp, norm, argmax (a second, integer output)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 5)
        self.w = nn.Parameter(torch.randn(4, 8, 8) * 0.1)

    def forward(self, x, y):
        h = self.fc1(x)                                         # [B, 32]
        h = F.hardswish(h) + F.mish(h) + F.hardsigmoid(h) + F.selu(h)
        g = h.view(-1, 4, 8)
        g = torch.einsum("bhi,hij->bhj", g, self.w)             # [B, 4, 8]
        h = g.reshape(-1, 32) + h.repeat(1, 2)[:, :32]
        h = h + torch.cumsum(h, dim=1) * 0.01
        h = h - torch.logsumexp(h, dim=1, keepdim=True)
        h = h / h.norm(dim=1, keepdim=True)
        logits = self.fc2(h)
        pred = logits.argmax(dim=1)
        return F.cross_entropy(logits, y), pred


class TensorOps(nn.Module):
    """Ops eff has no op of its own for, on run-time tensors."""

    def __init__(self, kind="prod"):
        super().__init__()
        self.kind = kind
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 5)

    def forward(self, x, y):
        h = self.fc1(x)
        if self.kind == "prod":
            h = h * (1 + 0.01 * torch.tanh(h)).prod(dim=1, keepdim=True)
        elif self.kind == "topk":
            h = h + h.topk(3, dim=1)[0].sum(1, keepdim=True)
        else:  # torch.sort is a TopK of the whole axis (96 elements)
            h = h + h.repeat(1, 3).sort(dim=1)[0][:, :32]
        return F.cross_entropy(self.fc2(h), y)


class PositionalSinCos(nn.Module):
    """Sinusoidal positions computed in forward from arange (sin/cos/exp)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.fc = nn.Linear(16, 20)

    def forward(self, idx, targets):  # idx [B, 6]
        T, d = idx.size(1), 16
        pos = torch.arange(T, dtype=torch.float).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
        pe = torch.cat([torch.sin(pos * div), torch.cos(pos * div)], dim=1)
        h = self.emb(idx) + pe
        return F.cross_entropy(self.fc(h).transpose(1, 2), targets)


class ConvNet(nn.Module):
    """conv -> feature(h) -> spatial mean -> linear -> cross entropy, on
    x f32[B, 3, 8, 8] (for the image ops one at a time)."""

    def __init__(self, feature, channels=8):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.feature = feature
        self.fc = nn.Linear(channels, 10)

    def forward(self, x, y):
        h = self.feature(F.relu(self.conv(x)))
        return F.cross_entropy(self.fc(h.mean((2, 3))), y)


class UNetTiny(nn.Module):
    """Encoder/decoder: strided conv down, ConvTranspose2d and Upsample up,
    skip concatenation, GroupNorm, reflect padding, per-pixel loss."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect")
        self.gn = nn.GroupNorm(2, 8)
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up_t = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.up_n = nn.Upsample(scale_factor=2, mode="nearest")
        self.mix = nn.Conv2d(8 + 8 + 16, 4, 1)

    def forward(self, x, y):         # x [B, 3, 8, 8], y [B, 8, 8] classes
        e = F.silu(self.gn(self.enc(x)))
        d = F.leaky_relu(self.down(e), 0.1)
        u = torch.cat([e, self.up_t(d), self.up_n(d)], dim=1)
        return F.cross_entropy(self.mix(u), y)


class SuperRes(nn.Module):
    """PixelShuffle, bilinear upsampling, InstanceNorm2d and PReLU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 12, 3, padding=1)
        self.inorm = nn.InstanceNorm2d(3, affine=True)
        self.prelu = nn.PReLU(3)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)

    def forward(self, x, target):    # x [B, 3, 8, 8], target [B, 3, 16, 16]
        h = F.pixel_shuffle(self.conv(x), 2)
        h = self.prelu(self.inorm(h)) + self.up(x)
        return ((h - target) ** 2).mean()


class GatherScatterLoss(nn.Module):
    """Hand-written losses: logp.gather(1, y), scatter of a one-hot, x.std,
    and in-place index assignment."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 5)

    def forward(self, x, y):
        h = self.fc1(x)
        h = h / (h.std(dim=1, keepdim=True) + 1e-5)
        h = h.clone()
        h[:, 0] = 0.0
        logits = self.fc2(h)
        logp = F.log_softmax(logits, dim=1)
        picked = logp.gather(1, y[:, None]).squeeze(1)
        onehot = torch.zeros_like(logits).scatter(1, y[:, None], 1.0)
        return -picked.mean() + 0.1 * ((logits.softmax(1) - onehot) ** 2).mean()


def smoothed_ce(logits, y, eps=0.1):
    """label_smoothing written out, as users do when the exporter refuses it."""
    logp = F.log_softmax(logits, dim=-1)
    nll = F.nll_loss(logp, y)
    return (1 - eps) * nll - eps * logp.mean(-1).mean()


def activation(module):
    return lambda: MLPWith(body=module)


def mlp_loss(loss, classes=5):
    return lambda: MLPWith(loss=loss, classes=classes)


# --------------------------------------------------------------------------
# The zoo: name -> (factory, opset, inputs, what it exercises, export extras)
# --------------------------------------------------------------------------

def ints(*shape, high=5):
    return torch.randint(0, high, shape)


def floats(*shape):
    return torch.randn(*shape)


def mlp_inputs():
    return (floats(B, 16), ints(B))


ZOO = []


def model(name, factory, opset, inputs, what, **extra):
    ZOO.append((name, factory, opset, inputs, what, extra))


for _opset in (13, 14, 15, 16, 17):
    model("gpt_opset%d" % _opset, GPTLoss, _opset,
          lambda: (ints(B, 16, high=64), ints(B, 16, high=64)),
          "example GPT (bool tril mask, erf GELU, tied head)"
          + ("; LayerNorm decomposed below opset 17" if _opset < 17 else ""))
model("nanogpt_float_tril", NanoGPT, 17,
      lambda: (ints(B, 16, high=64), ints(B, 16, high=64)),
      "nanoGPT attention: FLOAT tril buffer, masked_fill(bias[:,:,:T,:T] == 0, -inf)")
model("nanogpt_float_tril_opset14", NanoGPT, 14,
      lambda: (ints(B, 16, high=64), ints(B, 16, high=64)),
      "nanoGPT attention with a float tril buffer, decomposed LayerNorm")
model("gelu_tanh", GeluTanh, 17, mlp_inputs, "F.gelu(approximate='tanh')")
model("nanogpt_gelu_tanh_opset13", lambda: NanoGPT(gelu="tanh"), 13,
      lambda: (ints(B, 16, high=64), ints(B, 16, high=64)),
      "nanoGPT with tanh GELU at opset 13")
model("transformer_encoder_layer", EncoderLayer, 17,
      lambda: (ints(B, 8, high=50), ints(B, 8, high=50)),
      "nn.TransformerEncoderLayer(batch_first=True, dropout=0.1), post-LN, relu")
model("transformer_encoder_layer_prenorm_gelu",
      lambda: EncoderLayer(norm_first=True, activation="gelu"), 14,
      lambda: (ints(B, 8, high=50), ints(B, 8, high=50)),
      "nn.TransformerEncoderLayer(norm_first=True, activation='gelu'), opset 14")
model("mha_causal_float_mask", MHACausal, 17,
      lambda: (floats(B, 8, 16), ints(B, high=3)),
      "nn.MultiheadAttention with generate_square_subsequent_mask (float -inf, Trilu)")
model("mha_causal_bool_mask", lambda: MHACausal(bool_mask=True), 16,
      lambda: (floats(B, 8, 16), ints(B, high=3)),
      "nn.MultiheadAttention with a bool triu attn_mask")
model("resnet_block", ResNetTiny, 17,
      lambda: (floats(B, 3, 16, 16), ints(B, high=10)),
      "Conv2d(bias=False)+BatchNorm2d+ReLU, residual add, MaxPool2d(3,2,1,ceil_mode), AdaptiveAvgPool2d(1)")
model("resnet_block_opset13", ResNetTiny, 13,
      lambda: (floats(B, 3, 16, 16), ints(B, high=10)),
      "the ResNet block at opset 13 (BatchNormalization-9 training outputs)")
model("avg_pools", Pools, 17,
      lambda: (floats(B, 3, 8, 8), ints(B, high=10)),
      "AvgPool2d(2, count_include_pad=False), AvgPool2d(3,2,1, count_include_pad=False)")
model("conv1d_bn1d", Conv1dBN, 17,
      lambda: (floats(B, 4, 12), ints(B, high=3)), "Conv1d + BatchNorm1d")
model("dropout2d", Dropout2dNet, 17,
      lambda: (floats(B, 3, 8, 8), ints(B, high=10)), "nn.Dropout2d in training mode")
model("linear_3d", Linear3D, 17, lambda: (floats(B, 6, 16), ints(B, 6)),
      "nn.Linear on a 3-D input (MatMul + Add)")
model("act_sigmoid", activation(nn.Sigmoid()), 17, mlp_inputs, "nn.Sigmoid")
model("act_tanh", activation(nn.Tanh()), 17, mlp_inputs, "nn.Tanh")
model("act_silu", activation(nn.SiLU()), 17, mlp_inputs, "nn.SiLU")
model("act_leaky_relu", activation(nn.LeakyReLU(0.2)), 17, mlp_inputs, "nn.LeakyReLU(0.2)")
model("act_softplus", activation(nn.Softplus()), 17, mlp_inputs, "nn.Softplus")
model("act_softplus_beta", activation(nn.Softplus(beta=2.0)), 15, mlp_inputs,
      "nn.Softplus(beta=2)")
model("act_elu", activation(nn.ELU()), 17, mlp_inputs, "nn.ELU")
model("act_hardtanh", activation(nn.Hardtanh()), 17, mlp_inputs, "nn.Hardtanh")
model("act_relu6_gelu", activation(lambda h: F.gelu(F.relu6(h))), 13, mlp_inputs,
      "F.relu6 and erf F.gelu at opset 13")
model("loss_mse", mlp_loss(lambda o, y: F.mse_loss(o, F.one_hot(y, 5).float())), 17,
      mlp_inputs, "F.mse_loss against one_hot(y)")
model("loss_mse_manual",
      mlp_loss(lambda o, y: ((o - F.one_hot(y, 5).float()) ** 2).mean()), 17, mlp_inputs,
      "mean squared error written out (torch 1.13 cannot export F.mse_loss)")
model("loss_bce_logits",
      mlp_loss(lambda o, y: F.binary_cross_entropy_with_logits(o[:, 0], (y > 2).float())),
      17, mlp_inputs, "F.binary_cross_entropy_with_logits")
model("loss_ce_ignore_index", mlp_loss(lambda o, y: F.cross_entropy(o, y, ignore_index=0)),
      17, mlp_inputs, "F.cross_entropy(ignore_index=0)")
model("loss_ce_label_smoothing",
      mlp_loss(lambda o, y: F.cross_entropy(o, y, label_smoothing=0.1)), 17, mlp_inputs,
      "F.cross_entropy(label_smoothing=0.1)")
model("loss_ce_label_smoothing_manual", mlp_loss(smoothed_ce), 17, mlp_inputs,
      "label smoothing written with log_softmax + nll_loss")
model("loss_nll_log_softmax", mlp_loss(lambda o, y: F.nll_loss(F.log_softmax(o, 1), y)),
      17, mlp_inputs, "F.nll_loss(F.log_softmax(x))")
model("loss_ce_sum_opset13", mlp_loss(lambda o, y: F.cross_entropy(o, y, reduction="sum")),
      13, mlp_inputs, "F.cross_entropy(reduction='sum') at opset 13")
model("stats_normalize_mean_var", Stats, 17,
      mlp_inputs, "F.normalize, x.mean(dim), x.var(dim)")
model("shape_ops", ShapeOps, 17, mlp_inputs,
      "torch.cat/stack, chunk, flatten(1), permute, expand, flip, x[:, -1], view(B, -1)")
model("masked_ops", MaskedOps, 17, mlp_inputs, "torch.clamp, torch.where, masked_fill")
model("embedding_padding_idx", EmbeddingPad, 17, lambda: (ints(B, 6, high=20), ints(B)),
      "nn.Embedding(padding_idx=0), x[:, -1]")
model("more_ops", MoreOps, 17, mlp_inputs,
      "hardswish, mish, hardsigmoid, selu, einsum, repeat, cumsum, logsumexp, "
      "norm, argmax as a second output")
model("positional_sincos", PositionalSinCos, 17, lambda: (ints(B, 6, high=20), ints(B, 6, high=20)),
      "sinusoidal positions computed in forward (Range, Sin, Cos, Exp on constants)")
model("unet_tiny", UNetTiny, 17, lambda: (floats(B, 3, 8, 8), ints(B, 8, 8, high=4)),
      "reflect padding_mode, GroupNorm, SiLU, strided Conv2d, ConvTranspose2d, "
      "Upsample(nearest), skip concat, per-pixel cross entropy")
model("super_resolution", SuperRes, 16,
      lambda: (floats(B, 3, 8, 8), floats(B, 3, 16, 16)),
      "PixelShuffle (DepthToSpace), InstanceNorm2d, PReLU, Upsample(bilinear), MSE")
model("gather_scatter_loss", GatherScatterLoss, 17, mlp_inputs,
      "x.std, index assignment (ScatterND), logp.gather (GatherElements), "
      "scatter one-hot (ScatterElements)")
model("unsupported_prod", TensorOps, 17, mlp_inputs,
      "x.prod(dim) on activations: ReduceProd (no eff op; must fail cleanly)")
model("topk", lambda: TensorOps("topk"), 17, mlp_inputs,
      "x.topk(3): TopK, written as three selections")
model("unsupported_sort", lambda: TensorOps("sort"), 17, mlp_inputs,
      "x.sort over 96 elements: TopK with K = 96 (must fail cleanly)")
model("dynamic_batch_mlp", lambda: MLPWith(body=nn.ReLU()), 17, mlp_inputs,
      "dynamic_axes on the batch dimension (import with --shape)",
      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
model("dynamic_batch_gpt", GPTLoss, 17,
      lambda: (ints(B, 16, high=64), ints(B, 16, high=64)),
      "the example GPT with a dynamic batch dimension (import with --shape)",
      dynamic_axes={"idx": {0: "batch"}, "targets": {0: "batch"}})


def export(name, factory, opset, make_inputs, extra):
    torch.manual_seed(0)
    module = factory()
    module.train()
    args = make_inputs()
    forward = module.forward
    n_params = len(forward.__code__.co_varnames[1:forward.__code__.co_argcount])
    input_names = list(forward.__code__.co_varnames[1:1 + n_params])
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, f,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=opset,
                          input_names=input_names, output_names=["loss"], **extra)
    m = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(m, full_check=True)
    return m


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--only", default="", help="comma-separated model names")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    torch.set_num_threads(1)
    only = set(filter(None, args.only.split(",")))
    lines = []
    for name, factory, opset, make_inputs, what, extra in ZOO:
        if only and name not in only:
            continue
        try:
            m = export(name, factory, opset, make_inputs, extra)
        except Exception as e:  # torch's exporter refuses some modules
            reason = (str(e).strip() or type(e).__name__).splitlines()[0]
            reason = reason.split("  [Caused by")[0].split(" Please feel free")[0]
            lines.append("%s - not exportable by torch %s: %s" % (
                name, torch.__version__, reason))
            continue
        onnx.save_model(m, os.path.join(args.outdir, name + ".onnx"))
        lines.append("%s %d %s" % (name, opset, what))
    with open(os.path.join(args.outdir, "models.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

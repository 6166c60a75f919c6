"""A LLaMA written in PyTorch here (Hugging Face's LlamaForCausalLM: RMSNorm,
rotary embeddings, causal attention, SwiGLU, shifted cross-entropy), against
the graph examples/llama/make_llama_onnx.py writes with onnx.helper from the
same weights, for zoo_vs_torch.py."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "llama"))
import make_llama_onnx as gen  # noqa: E402
from zoo_vs_torch import ZooCase  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin, causal):
        B, S, D = x.shape

        def heads(t):
            return t.view(B, S, self.heads, self.head_dim).transpose(1, 2)
        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = q @ k.transpose(2, 3) / (self.head_dim ** 0.5)
        scores = scores.masked_fill(~causal, float("-inf"))
        o = F.softmax(scores, dim=-1) @ v
        return self.o_proj(o.transpose(1, 2).reshape(B, S, D))


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg, eps):
        super().__init__()
        self.self_attn = Attention(cfg["dim"], cfg["heads"])
        self.mlp = MLP(cfg["dim"], cfg["hidden"])
        self.input_layernorm = RMSNorm(cfg["dim"], eps)
        self.post_attention_layernorm = RMSNorm(cfg["dim"], eps)

    def forward(self, h, cos, sin, causal):
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, causal)
        return h + self.mlp(self.post_attention_layernorm(h))


class LlamaModel(nn.Module):
    def __init__(self, cfg, eps):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["dim"])
        self.layers = nn.ModuleList(DecoderLayer(cfg, eps)
                                    for _ in range(cfg["layers"]))
        self.norm = RMSNorm(cfg["dim"], eps)


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg, seq, eps=1e-6):
        super().__init__()
        self.model = LlamaModel(cfg, eps)
        self.lm_head = nn.Linear(cfg["dim"], cfg["vocab"], bias=False)
        cos, sin = gen.rotary_tables(seq, cfg["dim"] // cfg["heads"])
        # Not state: the ONNX graph holds them as constants.
        self.register_buffer("cos", torch.from_numpy(cos), persistent=False)
        self.register_buffer("sin", torch.from_numpy(sin), persistent=False)
        self.register_buffer("causal", torch.tril(torch.ones(seq, seq,
                                                             dtype=torch.bool)),
                             persistent=False)

    def forward(self, input_ids, labels):
        h = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            h = layer(h, self.cos, self.sin, self.causal)
        logits = self.lm_head(self.model.norm(h))
        shift_logits = logits[:, :-1, :].reshape(-1, logits.shape[-1])
        shift_labels = labels[:, 1:].reshape(-1)
        return F.cross_entropy(shift_logits, shift_labels, ignore_index=-100)


def tiny():
    """2 layers, d 32, 4 heads (head size 8), SwiGLU 64, vocab 64; batch 2 x
    seq 16 of random tokens, a few labels -100 (ignored)."""
    cfg, B, S = dict(gen.CONFIGS["tiny"]), 2, 16
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg, S)
    for name, p in model.named_parameters():
        with torch.no_grad():
            if p.dim() == 1:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.1)

    def batches(step):
        rng = np.random.RandomState(100 + step)
        ids = rng.randint(0, cfg["vocab"], size=(B, S)).astype(np.int64)
        labels = ids.copy()
        labels[rng.rand(B, S) < 0.1] = -100
        return {"input_ids": ids, "labels": labels}

    def write(path, state):
        gen.write_model(path, cfg, B, S, weights=state)

    return ZooCase(model, B, batches, write_onnx=write)

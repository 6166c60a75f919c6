"""Transformer-family models as people write them (torchvision's ViT and Swin,
torch.nn's TransformerEncoder and MultiheadAttention) at small sizes, for
zoo_vs_torch.py.

Their exports compute shapes and pads from the input's shape (Shape, Gather,
Where/Equal/ConstantOfShape, Mod/Sub/Concat chains): the importer folds them
(lib/Import/ONNX/ConstantFolding.cpp). Every dropout is p=0: effopt and
PyTorch would draw different masks."""
import math

import numpy as np
import torch
import torchvision
from torchvision.models.swin_transformer import SwinTransformer

from zoo_vision import WithLoss, images
from zoo_vs_torch import ZooCase


def vit():
    """A tiny VisionTransformer: the class token is `expand`ed to the batch
    (Expand of a shape computed from Shape), the encoder is
    nn.MultiheadAttention."""
    torch.manual_seed(0)
    model = torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
        mlp_dim=64, num_classes=10)
    return ZooCase(WithLoss(model), 4, images(4, 3, 32, 10, seed=2),
                   ("logits",))


def swin():
    """A tiny SwinTransformer: window 3 on 7x7 and 4x4 maps, so the windows
    are padded (F.pad with pads computed from the shape) and shifted (the
    shifted-window attention masks are built by slice assignments)."""
    torch.manual_seed(0)
    model = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                            num_heads=[2, 2], window_size=[3, 3],
                            stochastic_depth_prob=0.0, num_classes=10)
    return ZooCase(WithLoss(model), 2, images(2, 3, 28, 10, seed=3),
                   ("logits",))


def swin_t():
    """torchvision's swin_t itself (28M parameters) on 32x32 images: every
    stage pads its 8x8 .. 1x1 maps to the 7x7 window."""
    torch.manual_seed(0)
    model = torchvision.models.swin_t(num_classes=10)
    # swin_t fixes stochastic depth at 0.2: random, like dropout.
    for m in model.modules():
        if isinstance(m, torchvision.ops.StochasticDepth):
            m.p = 0.0
    return ZooCase(WithLoss(model), 1, images(1, 3, 32, 10, seed=4),
                   ("logits",))


class PaddedEncoder(torch.nn.Module):
    """Token classifier over nn.TransformerEncoder with a key padding mask
    (True marks padding), mean-pooled over the tokens that are not."""

    def __init__(self, vocab=20, d=32, heads=4, layers=2, classes=5):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        layer = torch.nn.TransformerEncoderLayer(
            d, heads, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers,
                                                   enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, tokens, pad, y):
        h = self.encoder(self.embed(tokens), src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1)
        logits = self.head(pooled)
        return torch.nn.functional.cross_entropy(logits, y), logits


def padded_tokens(batch, length, vocab, classes, seed=0):
    def batches(step):
        rng = np.random.RandomState(seed * 1000 + step)
        lengths = rng.randint(2, length + 1, size=batch)
        pad = np.arange(length)[None, :] >= lengths[:, None]
        return {"tokens": rng.randint(0, vocab, size=(batch, length)).astype(
                    np.int64),
                "pad": pad,
                "y": rng.randint(0, classes, size=batch).astype(np.int64)}
    return batches


def transformer_encoder():
    torch.manual_seed(0)
    return ZooCase(PaddedEncoder(), 4, padded_tokens(4, 8, 20, 5, seed=5),
                   ("logits",))


class CausalPaddedEncoder(PaddedEncoder):
    """PaddedEncoder with a causal src_mask as well (a decoder-only stack
    written with nn.TransformerEncoder): PyTorch merges the two masks into
    one float mask."""

    def forward(self, tokens, pad, y):
        causal = torch.nn.Transformer.generate_square_subsequent_mask(
            tokens.shape[1])
        h = self.encoder(self.embed(tokens), mask=causal,
                         src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1)
        logits = self.head(pooled)
        return torch.nn.functional.cross_entropy(logits, y), logits


def causal_encoder():
    torch.manual_seed(0)
    return ZooCase(CausalPaddedEncoder(), 4,
                   padded_tokens(4, 9, 20, 5, seed=7), ("logits",))


class MaskedAttention(torch.nn.Module):
    """nn.MultiheadAttention with a float attention mask given as an input
    (causal: -inf above the diagonal), then a linear head per token."""

    def __init__(self, d=16, heads=2, classes=6):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(d, heads, dropout=0.0,
                                                batch_first=True)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x, mask, y):
        h, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)
        logits = self.head(h)
        return torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), y.flatten()), logits


def causal_sequences(batch, length, d, classes, seed=0):
    def batches(step):
        rng = np.random.RandomState(seed * 1000 + step)
        mask = np.triu(np.full((length, length), -np.inf, np.float32), 1)
        return {"x": rng.randn(batch, length, d).astype(np.float32),
                "mask": mask,
                "y": rng.randint(0, classes, size=(batch, length)).astype(
                    np.int64)}
    return batches


def masked_attention():
    torch.manual_seed(0)
    return ZooCase(MaskedAttention(), 3, causal_sequences(3, 6, 16, 6, seed=6),
                   ("logits",))


class TokenLM(torch.nn.Module):
    """A decoder-only language model as people write one with torch.nn: a
    causal nn.TransformerEncoder, an untied LM head with a bias, and the
    per-token cross-entropy over the flattened logits with ignored targets
    (-100, PyTorch's default ignore_index). Its vocabulary is large and odd
    (5003 > 4096): on the cuda target the loss takes the online
    log-sum-exp, with the per-row terms and the logits' gradient in its
    blocks (the row epilogue), one element at a time (no 16-byte vectors
    divide 5003)."""

    def __init__(self, vocab=5003, d=32, heads=4, layers=1, length=8):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(length, d))
        layer = torch.nn.TransformerEncoderLayer(
            d, heads, dim_feedforward=64, dropout=0.0, batch_first=True,
            norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers,
                                                   enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, tokens, targets):
        causal = torch.nn.Transformer.generate_square_subsequent_mask(
            tokens.shape[1])
        h = self.encoder(self.embed(tokens) + self.pos, mask=causal)
        logits = self.head(h)
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def token_stream(batch, length, vocab, seed=0):
    def batches(step):
        rng = np.random.RandomState(seed * 1000 + step)
        targets = rng.randint(0, vocab, size=(batch, length)).astype(np.int64)
        # About one target in five ignored (padding).
        targets[rng.rand(batch, length) < 0.2] = -100
        return {"tokens": rng.randint(0, vocab, size=(batch, length)).astype(
                    np.int64),
                "targets": targets}
    return batches


def token_lm():
    torch.manual_seed(0)
    return ZooCase(TokenLM(), 4, token_stream(4, 8, 5003, seed=11))


class NanoBlock(torch.nn.Module):
    """A GPT block as nanoGPT writes it: one qkv Linear split three ways,
    heads by view/transpose, the causal mask a registered tril buffer
    applied with masked_fill, softmax, tanh-approximated GELU."""

    def __init__(self, d, heads, length):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(length, length))
                             .view(1, 1, length, length))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        h = self.heads
        q = q.view(B, T, h, C // h).transpose(1, 2)
        k = k.view(B, T, h, C // h).transpose(1, 2)
        v = v.view(B, T, h, C // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous()
        x = x + self.proj(y.view(B, T, C))
        return x + self.fc2(torch.nn.functional.gelu(self.fc(self.ln2(x)),
                                                     approximate="tanh"))


class TiedGPT(torch.nn.Module):
    """A nanoGPT-style language model: token and position embeddings, the
    LM head tied to the token embedding (one parameter, two uses), an odd
    vocabulary (301), the loss over the flattened logits."""

    def __init__(self, vocab=301, d=48, heads=3, layers=2, length=24):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(length, d)
        self.blocks = torch.nn.ModuleList(
            [NanoBlock(d, heads, length) for _ in range(layers)])
        self.ln_f = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return torch.nn.functional.cross_entropy(
            logits.view(-1, logits.size(-1)), targets.view(-1))


def tied_gpt():
    torch.manual_seed(0)

    def batches(step):
        rng = np.random.RandomState(5000 + step)
        return {"idx": rng.randint(0, 301, size=(3, 24)).astype(np.int64),
                "targets": rng.randint(0, 301, size=(3, 24)).astype(np.int64)}
    return ZooCase(TiedGPT(), 3, batches)


class Decoder(torch.nn.Module):
    """nn.TransformerDecoder (self-attention, cross-attention to an encoded
    source of another length, GELU feed-forward), classified from the mean
    over the target positions."""

    def __init__(self, d=32, classes=7):
        super().__init__()
        layer = torch.nn.TransformerDecoderLayer(
            d, 4, dim_feedforward=48, dropout=0.0, batch_first=True,
            activation="gelu")
        self.decoder = torch.nn.TransformerDecoder(layer, 2)
        self.src = torch.nn.Linear(5, d)
        self.tgt = torch.nn.Linear(6, d)
        self.out = torch.nn.Linear(d, classes)

    def forward(self, src, tgt, y):
        h = self.decoder(self.tgt(tgt), self.src(src))
        return torch.nn.functional.cross_entropy(self.out(h.mean(1)), y)


def decoder():
    torch.manual_seed(0)

    def batches(step):
        rng = np.random.RandomState(6000 + step)
        return {"src": rng.randn(4, 9, 5).astype(np.float32),
                "tgt": rng.randn(4, 7, 6).astype(np.float32),
                "y": rng.randint(0, 7, size=(4,)).astype(np.int64)}
    return ZooCase(Decoder(), 4, batches)

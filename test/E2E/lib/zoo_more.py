"""More models as people write them, for zoo_vs_torch.py: segmentation
(a U-Net, torchvision's LRASPP), MLP-Mixer, a grouped-query LLaMA-style
GPT, a top-2 mixture-of-experts GPT, nn.Transformer as a seq2seq model,
3-D convolutions and pooling, WaveNet, a triplet network, ResNeXt,
tensor ops (TopK, gather, cumsum, pixel_shuffle, diagonal, KL divergence)
and torch.nn.functional term by term."""
import math

import numpy as np
import torch
import torchvision
from torch import nn
from torch.nn import functional as F

from zoo_vs_torch import ZooCase


def _rng(step, seed=7):
    return np.random.RandomState(seed * 1000 + step)


class ConvBlock(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """A two-level U-Net: MaxPool2d, bilinear F.interpolate, skip torch.cat,
    per-pixel cross-entropy over (N, C, H, W) with ignore_index."""

    def __init__(self, classes=4):
        super().__init__()
        self.down1 = ConvBlock(3, 8)
        self.down2 = ConvBlock(8, 16)
        self.mid = ConvBlock(16, 16)
        self.up2 = ConvBlock(32, 8)
        self.up1 = ConvBlock(16, 8)
        self.head = nn.Conv2d(8, classes, 1)

    def forward(self, x, y):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 2))
        u2 = self.up2(torch.cat([F.interpolate(m, scale_factor=2.0,
                                               mode="bilinear",
                                               align_corners=False), d2], 1))
        u1 = self.up1(torch.cat([F.interpolate(u2, size=d1.shape[-2:],
                                               mode="bilinear",
                                               align_corners=True), d1], 1))
        return F.cross_entropy(self.head(u1), y, ignore_index=255)


def unet():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        y = r.randint(0, 4, size=(2, 16, 16)).astype(np.int64)
        y[:, :2, :] = 255
        return {"x": r.randn(2, 3, 16, 16).astype(np.float32), "y": y}
    return ZooCase(UNet(), 2, batches, rtol=3e-3, atol=3e-5)


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.tok = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(),
                                 nn.Linear(2 * tokens, tokens))
        self.norm2 = nn.LayerNorm(dim)
        self.ch = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(),
                                nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.tok(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.norm2(x))


class Mixer(nn.Module):
    """MLP-Mixer: a strided patch convolution, token-mixing MLPs over a
    transposed axis, cross-entropy with label smoothing (gather)."""

    def __init__(self, classes=5, dim=24, patch=4, size=16):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        tokens = (size // patch) ** 2
        self.blocks = nn.Sequential(*[MixerBlock(tokens, dim) for _ in range(2)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x, y):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = self.norm(self.blocks(x)).mean(1)
        # Label smoothing written out: torch 1.13 does not export it.
        logp = F.log_softmax(self.head(x), -1)
        smooth = 0.1
        nll = -logp.gather(1, y.unsqueeze(1)).squeeze(1)
        return ((1 - smooth) * nll - smooth * logp.mean(-1)).mean()


def mixer():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(4, 3, 16, 16).astype(np.float32),
                "y": r.randint(0, 5, size=4).astype(np.int64)}
    return ZooCase(Mixer(), 4, batches)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class GQABlock(nn.Module):
    def __init__(self, dim, heads, kv_heads, length):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.norm1 = RMSNorm(dim)
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.norm2 = RMSNorm(dim)
        self.gate = nn.Linear(dim, 3 * dim, bias=False)
        self.up = nn.Linear(dim, 3 * dim, bias=False)
        self.down = nn.Linear(3 * dim, dim, bias=False)
        t = torch.arange(length, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        ang = torch.outer(t, inv)
        self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1), persistent=False)
        self.register_buffer("sin", torch.cat([ang.sin(), ang.sin()], -1), persistent=False)
        self.register_buffer("mask", torch.triu(torch.ones(length, length, dtype=torch.bool), 1),
                             persistent=False)

    def rope(self, x):
        a, b = x.chunk(2, -1)
        return x * self.cos + torch.cat([-b, a], -1) * self.sin

    def forward(self, x):
        B, T, C = x.shape
        h = self.norm1(x)
        q = self.q(h).view(B, T, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(h).view(B, T, 2, self.kv_heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k = self.rope(q), self.rope(k)
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        att = att.masked_fill(self.mask, float("-inf")).softmax(-1)
        x = x + self.o((att @ v).transpose(1, 2).reshape(B, T, C))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class GQAGPT(nn.Module):
    """A hand-written LLaMA-style GPT: RMSNorm, rotary embeddings from
    buffers, grouped-query attention (repeat_interleave), masked_fill(-inf)
    causal softmax, SwiGLU, no biases, tied embeddings, ignore_index=-100."""

    def __init__(self, vocab=64, dim=32, heads=4, kv_heads=2, length=12):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(GQABlock(dim, heads, kv_heads, length) for _ in range(2))
        self.norm = RMSNorm(dim)

    def forward(self, idx, targets):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        logits = self.norm(x) @ self.emb.weight.t()
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def gqa_gpt():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        idx = r.randint(0, 64, size=(3, 12)).astype(np.int64)
        t = np.roll(idx, -1, 1)
        t[:, -1] = -100
        return {"idx": idx, "targets": t}
    return ZooCase(GQAGPT(), 3, batches)


class Video(nn.Module):
    """3-D windows: Conv3d (padding, stride, dilation, groups, a (3, 1, 1)
    temporal and a (1, 3, 3) spatial factor as R(2+1)D writes them),
    BatchNorm3d, MaxPool3d with ceil_mode, AvgPool3d with and without
    count_include_pad, AdaptiveAvgPool3d."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv3d(3, 8, 3, padding=1, bias=False), nn.BatchNorm3d(8), nn.ReLU(),
            nn.MaxPool3d((3, 2, 2), stride=2, padding=(1, 0, 0), ceil_mode=True))
        self.spatial = nn.Conv3d(8, 12, (1, 3, 3), padding=(0, 1, 1))
        self.temporal = nn.Conv3d(12, 12, (3, 1, 1), padding=(2, 0, 0),
                                  dilation=(2, 1, 1), groups=3)
        self.strided = nn.Conv3d(12, 16, (2, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1))
        self.pool_a = nn.AvgPool3d(3, stride=1, padding=1, count_include_pad=False)
        self.pool_b = nn.AvgPool3d((2, 2, 2), stride=2, ceil_mode=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x, y):
        h = self.stem(x)
        h = F.relu(self.temporal(F.relu(self.spatial(h)))) + h.repeat(1, 2, 1, 1, 1)[:, :12]
        h = self.pool_b(self.pool_a(F.relu(self.strided(h))))
        h = F.adaptive_avg_pool3d(h, 1).flatten(1)
        return F.cross_entropy(self.head(h), y)


def video3d():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(2, 3, 7, 12, 12).astype(np.float32),
                "y": r.randint(0, 3, size=2).astype(np.int64)}
    return ZooCase(Video(), 2, batches)


class WaveNet(nn.Module):
    """Causal dilated Conv1d (F.pad on the left), gated tanh * sigmoid
    units, residual and skip sums, per-step cross-entropy over (N, C, T)."""

    def __init__(self, ch=12, classes=6):
        super().__init__()
        self.inp = nn.Conv1d(1, ch, 1)
        self.dil = nn.ModuleList(nn.Conv1d(ch, 2 * ch, 2, dilation=d) for d in (1, 2, 4))
        self.res = nn.ModuleList(nn.Conv1d(ch, ch, 1) for _ in range(3))
        self.out = nn.Sequential(nn.ReLU(), nn.Conv1d(ch, classes, 1))

    def forward(self, x, y):
        h = self.inp(x)
        skip = 0
        for conv, res in zip(self.dil, self.res):
            z = conv(F.pad(h, (conv.dilation[0], 0)))
            a, b = z.chunk(2, 1)
            g = torch.tanh(a) * torch.sigmoid(b)
            h = h + res(g)
            skip = skip + g
        return F.cross_entropy(self.out(skip + h), y)


def wavenet():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(3, 1, 20).astype(np.float32),
                "y": r.randint(0, 6, size=(3, 20)).astype(np.int64)}
    return ZooCase(WaveNet(), 3, batches)


class Triplet(nn.Module):
    """One encoder applied to three inputs (shared weights), PReLU,
    F.normalize, a triplet margin loss."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(10, 24), nn.PReLU(), nn.Linear(24, 8))

    def forward(self, a, p, n):
        ea, ep, en = (F.normalize(self.enc(t), dim=-1) for t in (a, p, n))
        # F.triplet_margin_loss written out (torch 1.13 does not export it).
        dp = (ea - ep + 1e-6).norm(dim=-1)
        dn = (ea - en + 1e-6).norm(dim=-1)
        return F.relu(dp - dn + 0.5).mean()


def triplet():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        a = r.randn(6, 10).astype(np.float32)
        return {"a": a, "p": a + 0.3 * r.randn(6, 10).astype(np.float32),
                "n": r.randn(6, 10).astype(np.float32)}
    return ZooCase(Triplet(), 6, batches)


class TensorOps(nn.Module):
    """gather, cumsum, topk, flip, roll, reflect padding, pixel_shuffle,
    einsum, var, logsumexp, amax, where, clamp, diagonal (an If on
    constants, EyeLike, GatherND), KL divergence."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 8, 3, padding=1, padding_mode="reflect")
        self.lin = nn.Linear(8, 8)
        self.w = nn.Parameter(torch.randn(8, 5) * 0.3)

    def forward(self, x, idx, target):
        h = F.pixel_shuffle(self.conv(x), 2)                 # N,2,2H,2W
        h = h.flatten(1)
        h = torch.cumsum(h, 1) / h.shape[1]
        top, _ = torch.topk(h, 8, dim=1)
        g = torch.gather(h, 1, idx)
        z = self.lin(top + g.flip(1) + torch.roll(g, 3, 1))
        z = torch.where(z > 0, z, 0.1 * z).clamp(-3, 3)
        s = torch.einsum("nd,dk->nk", z, self.w)
        s = s + z.var(1, keepdim=True) - z.amax(1, keepdim=True)
        s = s + 0.1 * torch.diagonal(z @ z.t()).unsqueeze(1)
        logp = s - torch.logsumexp(s, 1, keepdim=True)
        return F.kl_div(logp, target, reduction="batchmean")


def tensor_ops():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        t = r.rand(4, 5).astype(np.float32) + 0.1
        return {"x": r.randn(4, 2, 6, 6).astype(np.float32),
                "idx": r.randint(0, 72, size=(4, 8)).astype(np.int64),
                "target": t / t.sum(1, keepdims=True)}
    return ZooCase(TensorOps(), 4, batches)


def resnext():
    """torchvision's ResNet class as ResNeXt (grouped bottlenecks)."""
    from torchvision.models.resnet import Bottleneck, ResNet
    from zoo_vision import WithLoss, images
    torch.manual_seed(0)
    net = ResNet(Bottleneck, [1, 1, 1, 1], num_classes=5, groups=4, width_per_group=8)
    return ZooCase(WithLoss(net), 4, images(4, 3, 64, 5), extra_outputs=("logits",),
                   rtol=3e-3, atol=3e-5)


class Seg(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return F.cross_entropy(self.net(x)["out"], y)


def lraspp():
    torch.manual_seed(0)
    net = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=3)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(2, 3, 64, 64).astype(np.float32),
                "y": r.randint(0, 3, size=(2, 64, 64)).astype(np.int64)}
    return ZooCase(Seg(net), 2, batches, rtol=3e-3, atol=3e-5)


class MoE(nn.Module):
    """Top-2 routed experts, dense evaluation, gates scattered back."""

    def __init__(self, dim=16, experts=4):
        super().__init__()
        self.router = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(),
                                                   nn.Linear(2 * dim, dim))
                                     for _ in range(experts))

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        top, idx = probs.topk(2, dim=-1)
        top = top / top.sum(-1, keepdim=True)
        gates = torch.zeros_like(probs).scatter(-1, idx, top)
        out = torch.stack([e(x) for e in self.experts], -1)
        aux = (probs.mean((0, 1)) * F.one_hot(idx[..., 0], probs.shape[-1]).float().mean((0, 1))).sum()
        return (out * gates.unsqueeze(-2)).sum(-1), aux


class MoEGPT(nn.Module):
    def __init__(self, vocab=40, dim=16, length=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(length, dim) * 0.1)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.moe = MoE(dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.triu(torch.full((length, length), float("-inf")), 1))

    def forward(self, idx, targets):
        x = self.emb(idx) + self.pos
        h = self.n1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        m, aux = self.moe(self.n2(x))
        x = x + m
        return F.cross_entropy(self.head(x).flatten(0, 1), targets.flatten()) + 0.01 * aux


def moe_gpt():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        idx = r.randint(0, 40, size=(3, 8)).astype(np.int64)
        return {"idx": idx, "targets": np.roll(idx, -1, 1)}
    # The causal mask is a float buffer ONNX calls a weight.
    return ZooCase(MoEGPT(), 3, batches, effc_flags=["--mask-like=freeze"])


class Seq2Seq(nn.Module):
    def __init__(self, vocab=30, dim=16):
        super().__init__()
        self.src = nn.Embedding(vocab, dim)
        self.tgt = nn.Embedding(vocab, dim)
        self.t = nn.Transformer(dim, 2, 1, 1, 32, dropout=0.0, batch_first=True,
                                norm_first=True)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(6))

    def forward(self, src, tgt_in, tgt_out, src_pad):
        h = self.t(self.src(src), self.tgt(tgt_in), tgt_mask=self.causal,
                   src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad)
        return F.cross_entropy(self.head(h).flatten(0, 1), tgt_out.flatten(), ignore_index=0)


def seq2seq():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        src = r.randint(1, 30, size=(2, 7)).astype(np.int64)
        pad = np.zeros((2, 7), dtype=bool)
        pad[1, 5:] = True
        src[pad] = 0
        tgt = r.randint(1, 30, size=(2, 7)).astype(np.int64)
        tgt[1, 5:] = 0
        return {"src": src, "tgt_in": tgt[:, :6].copy(), "tgt_out": tgt[:, 1:].copy(),
                "src_pad": pad}
    return ZooCase(Seq2Seq(), 2, batches, effc_flags=["--mask-like=freeze"])


class Functional(nn.Module):
    """torch.nn.functional as people use it, one term each, summed:
    activations (logsigmoid, softmin, tanhshrink, softshrink, hardshrink,
    celu, selu, glu), losses (multilabel soft margin, Gaussian NLL, KL with
    log_target), cosine similarity, pairwise distance, local response norm,
    pixel_unshuffle, bicubic interpolation, adaptive max pooling, Softmax2d,
    sort, std, unfold, triu, outer, addcmul."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 6)

    def forward(self, x, t, c):
        a, b = self.a(x), self.b(x)
        img = a.view(1, 1, 5, 6)
        terms = [
            F.logsigmoid(a).mean(), (F.softmin(a, -1) * b).sum(),
            F.tanhshrink(a).mean(), F.softshrink(a, 0.3).mean(),
            F.hardshrink(a, 0.2).mean(), F.celu(a, 0.7).mean(), F.selu(a).mean(),
            F.glu(torch.cat([a, b], -1), -1).mean(),
            F.multilabel_soft_margin_loss(a, t),
            F.gaussian_nll_loss(a, c, F.softplus(b) + 0.1),
            F.kl_div(F.log_softmax(a, -1), F.log_softmax(b, -1), log_target=True,
                     reduction="batchmean"),
            F.cosine_similarity(a, b).mean(), F.pairwise_distance(a, b).mean(),
            nn.LocalResponseNorm(3)(a.view(5, 6, 1, 1)).pow(2).mean(),
            (F.pixel_unshuffle(a.repeat(1, 2).view(1, 1, 10, 6), 2)
             * torch.arange(60.0).view(1, 4, 5, 3)).mean(),
            F.interpolate(img, scale_factor=2.0, mode="bicubic",
                          align_corners=False).pow(2).mean(),
            F.adaptive_max_pool2d(img[:, :, :4, :], 2).pow(2).mean(),
            (nn.Softmax2d()(a.view(1, 5, 6, 1)) * b.view(1, 5, 6, 1)).sum(),
            (a.sort(1)[0] * torch.arange(6.0)).mean(), a.std(1).mean(),
            (F.unfold(img, 2) * torch.arange(20.0)).mean(),
            torch.triu(a).pow(2).mean(), torch.outer(a[0], b[1]).mean(),
            torch.addcmul(a, a, b, value=0.5).mean(),
        ]
        return sum(terms)


def functional():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(5, 6).astype(np.float32),
                "t": (r.rand(5, 6) > 0.5).astype(np.float32),
                "c": r.poisson(2.0, size=(5, 6)).astype(np.float32)}
    return ZooCase(Functional(), 5, batches)

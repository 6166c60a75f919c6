"""Models built from torch.nn modules as people write them, for
zoo_vs_torch.py: each function returns a ZooCase whose module returns the
loss first."""
import numpy as np
import torch
from torch import nn

from zoo_vs_torch import ZooCase


def _rng(step, seed=3):
    return np.random.RandomState(seed * 1000 + step)


class Conv1dNet(nn.Module):
    """Conv1d, GroupNorm, SiLU, AdaptiveAvgPool1d, cross-entropy."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(4, 16, 5, padding=2), nn.GroupNorm(4, 16), nn.SiLU(),
            nn.Conv1d(16, 16, 3, stride=2, padding=1, dilation=1),
            nn.GroupNorm(2, 16), nn.SiLU(), nn.AdaptiveAvgPool1d(1),
            nn.Flatten(), nn.Linear(16, 5))

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.body(x), y)


def conv1d_groupnorm():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(4, 4, 24).astype(np.float32),
                "y": r.randint(0, 5, size=4).astype(np.int64)}
    return ZooCase(Conv1dNet(), 4, batches)


class AutoEncoder(nn.Module):
    """Conv2d, InstanceNorm2d (affine), LeakyReLU, ConvTranspose2d,
    Upsample, Sigmoid, a squared-error loss (written out: PyTorch 1.13 cannot
    export aten::mse_loss)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1),
            nn.InstanceNorm2d(8, affine=True), nn.LeakyReLU(0.1),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ELU())
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"),
            nn.Conv2d(8, 3, 3, padding=1), nn.Sigmoid())

    def forward(self, x):
        return ((self.dec(self.enc(x)) - x) ** 2).mean()


def autoencoder():
    torch.manual_seed(0)

    def batches(step):
        return {"x": _rng(step).rand(2, 3, 16, 16).astype(np.float32)}
    return ZooCase(AutoEncoder(), 2, batches)


class Activations(nn.Module):
    """Linear, LayerNorm and the activations of torch.nn; BCE with logits."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(12, 32), nn.LayerNorm(32), nn.GELU(approximate="tanh"),
            nn.Linear(32, 32), nn.Mish(), nn.Linear(32, 32), nn.Softplus(),
            nn.Linear(32, 32), nn.Hardswish(), nn.Linear(32, 32), nn.Tanh(),
            nn.Linear(32, 32), nn.Hardtanh(), nn.Linear(32, 3))

    def forward(self, x, y):
        return nn.functional.binary_cross_entropy_with_logits(self.net(x), y)


def activations_bce():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(8, 12).astype(np.float32),
                "y": (r.rand(8, 3) > 0.5).astype(np.float32)}
    return ZooCase(Activations(), 8, batches)


class EmbeddingPool(nn.Module):
    """nn.Embedding with padding_idx, masked mean over tokens,
    LogSoftmax + NLLLoss."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16, padding_idx=0)
        self.head = nn.Sequential(nn.Linear(16, 16), nn.ReLU(),
                                  nn.Linear(16, 4), nn.LogSoftmax(dim=-1))

    def forward(self, tokens, y):
        mask = (tokens != 0).unsqueeze(-1).float()
        pooled = (self.emb(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return nn.functional.nll_loss(self.head(pooled), y)


def embedding_nll():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        t = r.randint(1, 50, size=(6, 10)).astype(np.int64)
        t[:, 7:] = 0
        return {"tokens": t, "y": r.randint(0, 4, size=6).astype(np.int64)}
    return ZooCase(EmbeddingPool(), 6, batches)


class Frozen(nn.Module):
    """A frozen sub-module (requires_grad=False) feeding a trained head, an
    L1 loss (written out: PyTorch 1.13 exports neither l1_loss nor
    smooth_l1_loss)."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        for p in self.backbone.parameters():
            p.requires_grad_(False)
        self.head = nn.Linear(16, 2)

    def forward(self, x, y):
        return (self.head(self.backbone(x)) - y).abs().mean()


def frozen_backbone():
    torch.manual_seed(0)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(4, 8).astype(np.float32),
                "y": r.randn(4, 2).astype(np.float32)}
    # ONNX cannot say requires_grad=False: an effc user freezes by name.
    return ZooCase(Frozen(), 4, batches, effc_flags=["--freeze", r"backbone\..*"])


class OddCNN(nn.Module):
    """Odd channel counts (13, 21) and image sizes (19 x 23), a depthwise
    strided convolution without padding, BatchNorm, Hardswish and ReLU6,
    AvgPool2d with ceil_mode, LazyLinear, and a squared-error loss written
    out (torch 1.13 does not export F.mse_loss)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 13, 3, padding=1), nn.BatchNorm2d(13), nn.Hardswish(),
            nn.Conv2d(13, 13, 3, stride=2, groups=13), nn.ReLU6(),
            nn.Conv2d(13, 21, 1), nn.AvgPool2d(2, ceil_mode=True),
            nn.Flatten(), nn.LazyLinear(3))

    def forward(self, x, y):
        return ((self.net(x) - y) ** 2).mean()


def odd_cnn():
    torch.manual_seed(0)
    model = OddCNN()
    model(torch.zeros(2, 3, 19, 23), torch.zeros(2, 3))  # sizes LazyLinear

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(5, 3, 19, 23).astype(np.float32),
                "y": r.randn(5, 3).astype(np.float32)}
    return ZooCase(model, 5, batches)

"""Models run by hand with zoo_vs_torch.py (too slow for lit, or a probe):
torchvision's video ResNets, Inception v3, MaxViT, DeepLabV3, tv_NAME
(torchvision.models.NAME at 64x64), and op_NAME:
one torch function after a Linear layer (the names: _op_cases()), e.g.

    zoo_vs_torch.py --model zoo_byhand:op_diag --steps 2 --bin BUILD/bin \
        --libeffrt BUILD/lib/libeffrt.so --work DIR
"""
import numpy as np
import torch
import torchvision
from torch import nn
from torch.nn import functional as F

from zoo_vs_torch import ZooCase


def _rng(step, seed=9):
    return np.random.RandomState(seed * 1000 + step)


def no_dropout(net):
    for m in net.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return net


class SegWithAux(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = no_dropout(net)

    def forward(self, x, y):
        out = self.net(x)
        return F.cross_entropy(out["out"], y) + 0.4 * F.cross_entropy(out["aux"], y)


def deeplab():
    torch.manual_seed(0)
    net = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=3, aux_loss=True)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(2, 3, 64, 64).astype(np.float32),
                "y": r.randint(0, 3, size=(2, 64, 64)).astype(np.int64)}
    return ZooCase(SegWithAux(net), 2, batches, rtol=3e-3, atol=3e-5)


class WithLoss(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)


def maxvit():
    from torchvision.models.maxvit import MaxVit
    torch.manual_seed(0)
    net = MaxVit(input_size=(32, 32), stem_channels=16, partition_size=2,
                 block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                 stochastic_depth_prob=0.0, num_classes=5)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(4, 3, 32, 32).astype(np.float32),
                "y": r.randint(0, 5, size=4).astype(np.int64)}
    return ZooCase(WithLoss(net), 4, batches, rtol=3e-3, atol=3e-5)


def inception():
    torch.manual_seed(0)
    net = torchvision.models.inception_v3(weights=None, aux_logits=False,
                                          init_weights=True, num_classes=4)

    class Inc(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = no_dropout(net)

        def forward(self, x, y):
            return F.cross_entropy(self.net(x), y)

    def batches(step):
        r = _rng(step)
        return {"x": r.randn(4, 3, 128, 128).astype(np.float32),
                "y": r.randint(0, 4, size=4).astype(np.int64)}
    return ZooCase(Inc(), 4, batches, rtol=3e-3, atol=3e-5)



def _op_cases():
    b = torch.from_numpy(np.random.RandomState(5).randn(5, 6).astype(np.float32))
    t = (b > 0).float()
    c = torch.from_numpy(np.random.RandomState(6).poisson(2.0, size=(5, 6)).astype(np.float32))
    return {
        "multilabel_soft_margin": lambda a: F.multilabel_soft_margin_loss(a, t),
        "gaussian_nll": lambda a: F.gaussian_nll_loss(a, c, F.softplus(b) + 0.1),
        "cosine_similarity": lambda a: F.cosine_similarity(a, b).mean(),
        "pairwise_distance": lambda a: F.pairwise_distance(a, b).mean(),
        "kl_log_target": lambda a: F.kl_div(F.log_softmax(a, -1), F.log_softmax(b, -1),
                                            log_target=True, reduction="batchmean"),
        "logsigmoid": lambda a: F.logsigmoid(a).mean(),
        "softmin": lambda a: (F.softmin(a, -1) * b).sum(),
        "tanhshrink": lambda a: F.tanhshrink(a).mean(),
        "softshrink": lambda a: F.softshrink(a, 0.3).mean(),
        "hardshrink": lambda a: F.hardshrink(a, 0.2).mean(),
        "celu": lambda a: F.celu(a, 0.7).mean(),
        "selu": lambda a: F.selu(a).mean(),
        "glu": lambda a: F.glu(a, -1).mean(),
        "rrelu_eval": lambda a: F.rrelu(a, training=False).mean(),
        "lrn": lambda a: nn.LocalResponseNorm(3)(a.view(5, 6, 1, 1)).pow(2).mean(),
        "pixel_unshuffle": lambda a: (F.pixel_unshuffle(a.repeat(1, 2).view(1, 1, 10, 6), 2)
                                      * torch.arange(60.0).view(1, 4, 5, 3)).mean(),
        "bicubic": lambda a: F.interpolate(a.view(1, 1, 5, 6), scale_factor=2.0, mode="bicubic",
                                           align_corners=False).pow(2).mean(),
        "adaptive_max": lambda a: F.adaptive_max_pool2d(a.view(1, 1, 5, 6)[:, :, :4, :], 2).pow(2).mean(),
        "softmax2d": lambda a: (nn.Softmax2d()(a.view(1, 5, 6, 1)) * b.view(1, 5, 6, 1)).sum(),
        "sort": lambda a: (a.sort(1)[0] * torch.arange(6.0)).mean(),
        "max_dim": lambda a: a.max(1)[0].mean(),
        "std": lambda a: a.std(1).mean(),
        "unfold": lambda a: (F.unfold(a.view(1, 1, 5, 6), 2) * torch.arange(20.0)).mean(),
        "triu": lambda a: torch.triu(a).pow(2).mean(),
        "diag": lambda a: torch.diagonal(a).pow(2).mean(),
        "outer": lambda a: torch.outer(a[0], a[1]).mean(),
        "clamp_tensor": lambda a: torch.clamp(a, min=b).pow(2).mean(),
        "nan_to_num": lambda a: torch.nan_to_num(a).pow(2).mean(),
        "addcmul": lambda a: torch.addcmul(a, a, b, value=0.5).mean(),
        "lerp": lambda a: torch.lerp(a, b.to(a), 0.3).pow(2).mean(),
        "baddbmm": lambda a: torch.baddbmm(torch.ones(1, 5, 5).to(a), a.view(1, 5, 6),
                                           b.to(a).view(1, 6, 5)).pow(2).mean(),
    }


class OpCase(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.f = f

    def forward(self, x):
        return self.f(self.lin(x))


def __getattr__(name):
    if name.startswith("tv_"):
        return _torchvision(name[3:])
    if not name.startswith("op_"):
        raise AttributeError(name)
    f = _op_cases()[name[3:]]

    def case():
        torch.manual_seed(0)
        return ZooCase(OpCase(f), 5, lambda s: {
            "x": np.random.RandomState(s).randn(5, 6).astype(np.float32)})
    return case


def _video(builder):
    def case():
        torch.manual_seed(0)
        net = builder(weights=None, num_classes=4)

        def batches(step):
            r = _rng(step)
            return {"x": r.randn(2, 3, 8, 64, 64).astype(np.float32),
                    "y": r.randint(0, 4, size=2).astype(np.int64)}
        return ZooCase(WithLoss(net), 2, batches, rtol=3e-3, atol=3e-5)
    return case


def _torchvision(name):
    """tv_NAME: torchvision.models.NAME at 64x64, batch 4, dropout and
    stochastic depth off."""
    def case():
        torch.manual_seed(0)
        net = no_dropout(getattr(torchvision.models, name)(weights=None, num_classes=5))
        for m in net.modules():
            if type(m).__name__ == "StochasticDepth":
                m.p = 0.0

        def batches(step):
            r = _rng(step)
            return {"x": r.randn(4, 3, 64, 64).astype(np.float32),
                    "y": r.randint(0, 5, size=4).astype(np.int64)}
        return ZooCase(WithLoss(net), 4, batches, rtol=3e-3, atol=3e-5)
    return case


r3d_18 = _video(torchvision.models.video.r3d_18)
r2plus1d_18 = _video(torchvision.models.video.r2plus1d_18)
mc3_18 = _video(torchvision.models.video.mc3_18)

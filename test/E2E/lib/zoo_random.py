"""Random models for zoo_vs_torch.py: `--model zoo_random:seed_N` (or
`big_N`) builds model N, a seeded chain of the ops transformer and MLP code
is made of -- Linear, LayerNorm, activations, softmax over either axis,
gating, residual MLPs, RMSNorm, centring over time, a Linear over time,
log-softmax by logsumexp, per-feature scale and shift -- at odd sizes,
ending in a cross-entropy. `seed_N` keeps rows short (warp reductions,
scalar code); `big_N` makes them long and vector-friendly (block
reductions, 16-byte accesses, the loss's online log-sum-exp with its row
epilogue). The kernel former's strategies meet shapes and orders no
hand-written model has; compare as any zoo model (step by step against
PyTorch), on the CPU or as the cuda step emulated.

Every LayerNorm is affine: torch 1.13 exports a LayerNorm without weights
as an invalid LayerNormalization (its checker refuses the graph)."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from zoo_vs_torch import ZooCase

ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
}


class Scale(nn.Module):
    """x * a + b per feature."""

    def __init__(self, d):
        super().__init__()
        self.a = nn.Parameter(1 + 0.5 * torch.randn(d))
        self.b = nn.Parameter(0.1 * torch.randn(d))

    def forward(self, x):
        return x * self.a + self.b


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * \
            self.weight


class Gate(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return x * torch.sigmoid(self.proj(x))


class ResidualMLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.mlp = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, hidden),
                                 nn.GELU(), nn.Linear(hidden, d))

    def forward(self, x):
        return x + self.mlp(x)


class OverTime(nn.Module):
    """A Linear across the time axis (transposes around it)."""

    def __init__(self, t):
        super().__init__()
        self.proj = nn.Linear(t, t)

    def forward(self, x):
        return self.proj(x.transpose(1, 2)).transpose(1, 2)


class Lambda(nn.Module):
    def __init__(self, name, fn):
        super().__init__()
        self.name, self.fn = name, fn

    def forward(self, x):
        return self.fn(x)


class RandomModel(nn.Module):
    def __init__(self, rng, d, t, classes, widths):
        super().__init__()
        layers, names = [], []
        for _ in range(rng.randint(3, 8)):
            kind = rng.choice(["linear", "layernorm", "activation", "softmax",
                               "gate", "residual", "rmsnorm", "center",
                               "over_time", "log_softmax", "scale"])
            if kind == "linear":
                out = int(rng.choice(widths))
                layers.append(nn.Linear(d, out, bias=bool(rng.rand() < 0.7)))
                kind += "(%d)" % out
                d = out
            elif kind == "layernorm":
                layers.append(nn.LayerNorm(d))
            elif kind == "activation":
                name = str(rng.choice(sorted(ACTIVATIONS)))
                layers.append(Lambda(name, ACTIVATIONS[name]))
                kind = name
            elif kind == "softmax":
                dim = int(rng.choice([1, 2]))
                layers.append(Lambda(kind, lambda x, dim=dim:
                                     torch.softmax(x, dim=dim)))
                kind += "(dim %d)" % dim
            elif kind == "gate":
                layers.append(Gate(d))
            elif kind == "residual":
                layers.append(ResidualMLP(d, int(rng.choice([2, 4])) * d))
            elif kind == "rmsnorm":
                layers.append(RMSNorm(d))
            elif kind == "center":
                layers.append(Lambda(kind, lambda x: x - x.mean(1, keepdim=True)))
            elif kind == "over_time":
                layers.append(OverTime(t))
            elif kind == "log_softmax":
                layers.append(Lambda(kind, lambda x: x - torch.logsumexp(
                    x, dim=-1, keepdim=True)))
            else:
                layers.append(Scale(d))
            names.append(kind)
        self.layers = nn.ModuleList(layers)
        self.head = nn.Linear(d, classes)
        self.names = names

    def forward(self, x, y):
        for layer in self.layers:
            x = layer(x)
        logits = self.head(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               y.reshape(-1))


def build(seed, big):
    rng = np.random.RandomState(seed + (1 << 20 if big else 0))
    torch.manual_seed(seed)
    if big:
        batch = int(rng.choice([1, 2]))
        t = int(rng.choice([2, 8, 16]))
        d = int(rng.choice([64, 256, 768, 1024, 4104, 5000]))
        classes = int(rng.choice([8, 4096, 5003, 8192, 12576]))
        widths = [64, 96, 256, 768, 1000, 4104]
    else:
        batch = int(rng.choice([1, 2, 3, 4]))
        t = int(rng.choice([1, 3, 8, 17, 32]))
        d = int(rng.choice([5, 16, 31, 64, 96, 129]))
        classes = int(rng.choice([3, 10, 257, 1000, 4099, 5003]))
        widths = [7, 16, 33, 64, 65, 130, 257]
    model = RandomModel(rng, d, t, classes, widths)
    print("zoo_random %s_%d: batch %d, time %d, features %d, classes %d: %s"
          % ("big" if big else "seed", seed, batch, t, d, classes,
             ", ".join(model.names)), flush=True)

    def batches(step):
        r = np.random.RandomState(seed * 100 + step)
        return {"x": r.randn(batch, t, d).astype(np.float32),
                "y": r.randint(0, classes, size=(batch, t)).astype(np.int64)}
    return ZooCase(model, batch, batches)


def __getattr__(name):
    """seed_N and big_N, for zoo_vs_torch.py's --model MODULE:FUNCTION."""
    kind, _, number = name.partition("_")
    if kind in ("seed", "big") and number.isdigit():
        return lambda: build(int(number), kind == "big")
    raise AttributeError(name)

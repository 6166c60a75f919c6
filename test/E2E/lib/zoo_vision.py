"""torchvision classification models at small sizes, for zoo_vs_torch.py.

Each function returns a ZooCase: the model wrapped with cross-entropy (the
loss is the graph's first output), a batch size and its batches."""
import numpy as np
import torch
import torchvision

from zoo_vs_torch import ZooCase


class WithLoss(torch.nn.Module):
    """model(x) -> (cross_entropy(model(x), y), logits)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        logits = self.model(x)
        return torch.nn.functional.cross_entropy(logits, y), logits


def images(batch, channels, size, classes, seed=0):
    def batches(step):
        rng = np.random.RandomState(seed * 1000 + step)
        return {"x": rng.randn(batch, channels, size, size).astype(np.float32),
                "y": rng.randint(0, classes, size=batch).astype(np.int64)}
    return batches


def resnet18():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    # 64x64 leaves layer4 2x2: BatchNorm over 4x2x2 values, not 2 (whose
    # normalisation is ill-conditioned enough to amplify rounding).
    return ZooCase(WithLoss(model), 4, images(4, 3, 64, 10, seed=1), ("logits",))


def squeezenet():
    torch.manual_seed(0)
    model = torchvision.models.squeezenet1_1(num_classes=10)
    model.classifier[0].p = 0.0  # its dropout: masks are drawn differently
    return ZooCase(WithLoss(model), 2, images(2, 3, 48, 10), ("logits",))


def densenet():
    """A small DenseNet (concat-heavy blocks; node names without repeated
    indices that policy full could once find)."""
    torch.manual_seed(0)
    model = torchvision.models.DenseNet(growth_rate=8, block_config=(2, 2),
                                        num_init_features=16, bn_size=2,
                                        num_classes=10)
    return ZooCase(WithLoss(model), 2, images(2, 3, 32, 10), ("logits",))


def _small(builder, size=64, batch=4, **kw):
    """At 64x64 and batch 4 the last stages keep 2x2 maps: BatchNorm over
    2 values (32x32, batch 2, 1x1 maps) turns rounding into gradients of
    1e8 and no two implementations agree."""
    torch.manual_seed(0)
    model = builder(num_classes=10, **kw)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0  # masks are drawn differently
    return ZooCase(WithLoss(model), batch, images(batch, 3, size, 10, seed=1),
                   ("logits",))


def mobilenet_v2():
    return _small(torchvision.models.mobilenet_v2, width_mult=0.25)


def mobilenet_v3_small():
    return _small(torchvision.models.mobilenet_v3_small, width_mult=0.25)


def efficientnet_b0():
    return _small(torchvision.models.efficientnet_b0, stochastic_depth_prob=0.0)


def shufflenet_v2():
    return _small(torchvision.models.shufflenet_v2_x0_5)


def regnet_y_400mf():
    return _small(torchvision.models.regnet_y_400mf)


def mnasnet():
    return _small(torchvision.models.mnasnet0_5)


def convnext_tiny():
    return _small(torchvision.models.convnext_tiny, stochastic_depth_prob=0.0)


def googlenet():
    return _small(torchvision.models.googlenet, aux_logits=False,
                  init_weights=True)

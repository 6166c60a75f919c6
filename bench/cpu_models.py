"""The models of bench/cpu_vs_torch.py beyond test/E2E's (train_vs_torch.make):
a BERT-style encoder, torchvision's ResNet-18 and ViT at CIFAR sizes, and
the torchvision CNNs of issue 18 (TORCHVISION) at 32x32, batch 16.

make(name, steps, seed) -> (model, batch size, {input name: steps*B rows}),
as train_vs_torch.make; the model's forward returns (loss, logits). The
module is importable by path so that PyTorch's child process can unpickle
the models."""
import numpy as np
import torch
import torchvision


class WithLoss(torch.nn.Module):
    """model(x) -> (cross_entropy(model(x), y), logits)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        logits = self.model(x)
        return torch.nn.functional.cross_entropy(logits, y), logits


class Encoder(torch.nn.Module):
    """BERT-style: token + position embeddings, post-LN
    nn.TransformerEncoder with GELU, a classifier on the mean of the
    tokens."""

    def __init__(self, vocab, T, d, heads, layers, classes):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(1, T, d))
        layer = torch.nn.TransformerEncoderLayer(
            d, heads, dim_feedforward=4 * d, dropout=0.0, activation="gelu",
            batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers,
                                                   enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, tokens, y):
        h = self.encoder(self.tok(tokens) + self.pos)
        logits = self.head(h.mean(1))
        return torch.nn.functional.cross_entropy(logits, y), logits


def _images(rng, rows, size, classes):
    return {"x": rng.randn(rows, 3, size, size).astype(np.float32),
            "y": rng.randint(0, classes, size=rows).astype(np.int64)}


# torchvision classification CNNs at full width on 32x32 images, batch 16
# (every one accepts 32x32: their last stages run on 1x1 maps), as
# torchvision builds them, dropout included, except EfficientNet's
# stochastic depth: PyTorch 1.13 cannot export it (its in-place
# bernoulli_, "ONNX export of operator Bernoulli, out parameter is not
# supported"), so it is off.
TORCHVISION = {
    "squeezenet": lambda: torchvision.models.squeezenet1_1(num_classes=10),
    "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(num_classes=10),
    "regnet_y_400mf": lambda: torchvision.models.regnet_y_400mf(num_classes=10),
    "shufflenet_v2": lambda: torchvision.models.shufflenet_v2_x1_0(
        num_classes=10),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(
        num_classes=10, stochastic_depth_prob=0.0),
    "densenet121": lambda: torchvision.models.densenet121(num_classes=10),
    "mnasnet": lambda: torchvision.models.mnasnet1_0(num_classes=10),
    "googlenet": lambda: torchvision.models.googlenet(
        num_classes=10, aux_logits=False, init_weights=True),
}


def make(name, steps, seed):
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    if name == "bert":
        B, T = 16, 128
        model = Encoder(vocab=256, T=T, d=256, heads=8, layers=4, classes=8)
        return model, B, {
            "tokens": rng.randint(0, 256, size=(steps * B, T)).astype(np.int64),
            "y": rng.randint(0, 8, size=steps * B).astype(np.int64)}
    if name == "resnet18":
        B = 16
        model = WithLoss(torchvision.models.resnet18(num_classes=10))
        return model, B, _images(rng, steps * B, 32, 10)
    if name == "vit":
        B = 32
        model = WithLoss(torchvision.models.VisionTransformer(
            image_size=32, patch_size=4, num_layers=4, num_heads=4,
            hidden_dim=128, mlp_dim=512, dropout=0.0, attention_dropout=0.0,
            num_classes=10))
        return model, B, _images(rng, steps * B, 32, 10)
    if name in TORCHVISION:
        B = 16
        model = WithLoss(TORCHVISION[name]())
        return model, B, _images(rng, steps * B, 32, 10)
    return None

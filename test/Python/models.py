"""Small models for the Python package's tests."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class CNN(nn.Module):
    """Returns its loss (no loss_fn)."""

    def __init__(self):
        super().__init__()
        # No conv bias: batch norm cancels it, its gradient is rounding noise
        # that AdamW would amplify to +-lr either way.
        self.conv = nn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x, y):
        h = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return F.cross_entropy(self.fc(h.flatten(1)), y)


class Block(nn.Module):
    def __init__(self, d, heads, T):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(T, T)))

    def forward(self, x):
        B, T, C = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, h, C // h).transpose(1, 2)
        k = k.view(B, T, h, C // h).transpose(1, 2)
        v = v.view(B, T, h, C // h).transpose(1, 2)
        a = (q @ k.transpose(-2, -1)) * (1.0 / (C // h) ** 0.5)
        a = a.masked_fill(self.mask[:T, :T] == 0, float("-inf")).softmax(-1)
        y = (a @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Returns (loss, logits); tied embedding and head."""

    def __init__(self, vocab=48, d=32, layers=2, heads=2, T=8, device=None):
        super().__init__()
        self.tok = nn.Embedding(vocab, d, device=device)
        self.pos = nn.Embedding(T, d, device=device)
        self.blocks = nn.ModuleList(Block(d, heads, T) for _ in range(layers))
        self.ln = nn.LayerNorm(d, device=device)
        self.head = nn.Linear(d, vocab, bias=False, device=device)
        self.head.weight = self.tok.weight

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return loss, logits

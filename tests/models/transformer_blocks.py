"""Transformer blocks and small transformer models, built from PyTorch layers (no timm, no downloads).

Each factory returns `(module, example_inputs)` with random weights. Sizes are distinct per axis (tokens,
channels, heads) so that a wrong permutation cannot pass by accident, and multiples of 8 where the NPU's
matrix products need them:

- blocks: `layer_norm` (over the last dim), `gelu_tanh`, `gelu_exact`, `mlp` (linear-GELU-linear),
  `attention_matmul` (single head, explicit matmuls), `mha_matmul` (multi-head, explicit matmuls with
  view/permute), `mha_module` (torch.nn.MultiheadAttention), `attention_sdpa` (F.scaled_dot_product_attention),
  `encoder_layer` (pre-norm: x + attn(ln(x)), x + mlp(ln(x)));
- models: `kwt` (keyword transformer on a 1x1x49x10 MFCC input), `tiny_vit` (patch 8 at 32 px), `mobilevit_block`
  (conv + unfold-attention-fold, MobileViT-style).

Used by tests/models/test_transformers.py and benchmarks/transformers.py.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, dim, hidden, approximate="tanh"):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)
        self.act = nn.GELU(approximate=approximate)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class MatmulAttention(nn.Module):
    """Multi-head self-attention with explicit matmuls (the way most hand-written ViTs and KWT write it)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        if self.heads == 1:
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            a = torch.softmax((q @ k.transpose(-2, -1)) * self.scale, dim=-1)
            return self.proj(a @ v)
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = torch.softmax((q @ k.transpose(-2, -1)) * self.scale, dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, t, c))


class SdpaAttention(MatmulAttention):
    """timm's Attention with fused_attn: F.scaled_dot_product_attention over [B, heads, T, head_dim]."""

    def forward(self, x):
        b, t, c = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class ModuleAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


ATTENTION = {"matmul": MatmulAttention, "sdpa": SdpaAttention, "module": ModuleAttention}


class EncoderLayer(nn.Module):
    """Pre-norm transformer encoder layer: x + attn(ln(x)); x + mlp(ln(x))."""

    def __init__(self, dim, heads, hidden, attention="matmul", approximate="tanh"):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = ATTENTION[attention](dim, heads)
        self.mlp = MLP(dim, hidden, approximate)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class KWT(nn.Module):
    """Keyword transformer (Berg et al. 2021), small: MFCC frames [1, 1, 49, 10] are the tokens (time x features);
    a linear embedding, a class token and learned positions, encoder layers, the class token's head."""

    def __init__(self, dim=32, depth=2, heads=2, classes=12):
        super().__init__()
        self.embed = nn.Linear(10, dim)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.5)
        self.pos = nn.Parameter(torch.randn(1, 50, dim) * 0.2)
        self.layers = nn.Sequential(*[EncoderLayer(dim, heads, 2 * dim) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x.flatten(1, 2))  # [1, 49, dim]
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), 1) + self.pos
        return self.head(self.norm(self.layers(x))[:, 0])


class TinyViT(nn.Module):
    """ViT: conv patch embedding, learned positions, encoder layers, mean pooling, head."""

    def __init__(self, size=32, patch=8, dim=32, depth=2, heads=2, classes=10, attention="sdpa"):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.pos = nn.Parameter(torch.randn(1, (size // patch) ** 2, dim) * 0.2)
        self.layers = nn.Sequential(*[EncoderLayer(dim, heads, 2 * dim, attention) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.norm(self.layers(x)).mean(1))


class MobileViTBlock(nn.Module):
    """MobileViT block: local conv 3x3 + 1x1, unfold into 2x2 patches, transformer over the patches, fold,
    1x1 projection, concatenation with the input, fusion conv 3x3."""

    def __init__(self, c=16, dim=24, heads=2, patch=2):
        super().__init__()
        self.p = patch
        self.local = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU(), nn.Conv2d(c, dim, 1))
        self.encoder = EncoderLayer(dim, heads, 2 * dim, "sdpa")
        self.project = nn.Sequential(nn.Conv2d(dim, c, 1), nn.BatchNorm2d(c), nn.SiLU())
        self.fuse = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU())

    def forward(self, x):  # unfold / fold as timm's MobileVitBlock writes them (rank-4 transposes)
        y = self.local(x)
        b, d, h, w = y.shape
        p = self.p
        nh, nw = h // p, w // p
        y = y.reshape(b * d * nh, p, nw, p).transpose(1, 2)  # [B*D*nh, nw, p, p]
        y = y.reshape(b, d, nh * nw, p * p).transpose(1, 3).reshape(b * p * p, nh * nw, d)  # unfold
        y = self.encoder(y)
        y = y.contiguous().view(b, p * p, nh * nw, d).transpose(1, 3)  # fold: [B, D, N, P]
        y = y.reshape(b * d * nh, nw, p, p).transpose(1, 2).reshape(b, d, h, w)
        return self.fuse(torch.cat((x, self.project(y)), 1))


def _make(factory, *shape, seed=0):
    torch.manual_seed(seed)
    model = factory().eval()
    return model, (torch.randn(*shape),)


BLOCKS = {
    "layer_norm": lambda: _make(lambda: nn.LayerNorm(24), 1, 16, 24),
    "gelu_tanh": lambda: _make(lambda: nn.GELU(approximate="tanh"), 1, 16, 24),
    "gelu_exact": lambda: _make(lambda: nn.GELU(), 1, 16, 24),
    "mlp": lambda: _make(lambda: MLP(24, 48), 1, 16, 24),
    "attention_matmul": lambda: _make(lambda: MatmulAttention(24, 1), 1, 16, 24),
    "mha_matmul": lambda: _make(lambda: MatmulAttention(32, 2), 1, 24, 32),
    "mha_module": lambda: _make(lambda: ModuleAttention(32, 2), 1, 24, 32),
    "attention_sdpa": lambda: _make(lambda: SdpaAttention(32, 2), 1, 24, 32),
    "encoder_layer": lambda: _make(lambda: EncoderLayer(32, 2, 64), 1, 24, 32),
}

MODELS = {
    "kwt": lambda: _make(KWT, 1, 1, 49, 10),
    "tiny_vit": lambda: _make(TinyViT, 1, 3, 32, 32),
    "mobilevit_block": lambda: _make(MobileViTBlock, 1, 16, 16, 24),
}

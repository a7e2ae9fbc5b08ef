"""GroupNorm, PixelShuffle / PixelUnshuffle and F.normalize layers and small blocks around them, for
tests/models/test_norm_shuffle_layers.py and benchmarks/rnn.py: name -> () -> (module in eval mode, inputs)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from harness import Fn


def _seeded(make):
    def case():
        torch.manual_seed(0)
        module, inputs = make()
        return module.eval(), inputs
    return case


def _affine_group_norm(groups, channels):
    gn = nn.GroupNorm(groups, channels)
    with torch.no_grad():  # a trained-looking affine (the default is the identity)
        gn.weight.uniform_(0.5, 1.5)
        gn.bias.uniform_(-0.3, 0.3)
    return gn


LAYERS = {
    "group_norm": _seeded(lambda: (_affine_group_norm(4, 16), (torch.randn(1, 16, 6, 5),))),
    "group_norm_rank3": _seeded(lambda: (_affine_group_norm(2, 16), (torch.randn(1, 16, 12),))),
    "group_norm_no_affine": _seeded(lambda: (nn.GroupNorm(8, 16, affine=False), (torch.randn(1, 16, 7, 4),))),
    "conv_group_norm_silu": _seeded(lambda: (nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), _affine_group_norm(4, 16),
                                                           nn.SiLU()), (torch.randn(1, 8, 10, 6),))),
    "pixel_shuffle": _seeded(lambda: (nn.PixelShuffle(2), (torch.randn(1, 16, 5, 6),))),
    "pixel_shuffle_r3": _seeded(lambda: (nn.PixelShuffle(3), (torch.randn(1, 18, 4, 5),))),
    "pixel_unshuffle": _seeded(lambda: (nn.PixelUnshuffle(2), (torch.randn(1, 4, 10, 12),))),
    "conv_pixel_shuffle": _seeded(lambda: (nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.PixelShuffle(2)),
                                           (torch.randn(1, 8, 5, 6),))),
    "normalize_embedding": _seeded(lambda: (nn.Sequential(nn.Linear(16, 32), Fn(lambda s, x: F.normalize(x, dim=-1))),
                                            (torch.randn(1, 16),))),
    "normalize_channels": _seeded(lambda: (Fn(lambda s, x: F.normalize(x, dim=1)), (torch.randn(1, 16, 4, 5),))),
    "divide_by_norm": _seeded(lambda: (Fn(lambda s, x: x / x.norm(dim=-1, keepdim=True)), (torch.randn(2, 24),))),
}

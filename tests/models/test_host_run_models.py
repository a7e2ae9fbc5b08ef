"""Models whose .pte failed or crashed on the host runtime now run (or are refused at lower(), one line).

- Swin's relative position bias (transformers' `SwinForImageClassification`, Apache-2.0, built from a small config
  with random weights): `table[index].view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)` folded into a
  constant kept the permuted strides, the .pte stored it with dim order (2, 0, 3, 1), and ExecuTorch's portable
  `add` refused it (error 0x12). The block alone and the whole small Swin run and match PyTorch's quantized model.
- YOLO11n-cls's C2PSA attention, reproduced from the facts of the issue (the YOLO package is AGPL and not used):
  qkv 1x1 conv, view to (B, heads, key_dim*2+head_dim, N), split, (q^T k) * scale, softmax, v attn^T + a 3x3
  depthwise positional conv on v, 1x1 projection, at the shapes of the 160x160 classifier (128 channels, 2 heads,
  key_dim 32, head_dim 64, 5x5 map: BATCH_MATMULs [2, 25, 32] x [2, 32, 25] and [2, 64, 25] x [2, 25, 25]). It runs
  on the host. The abort of the whole classifier is its head's SOFTMAX over 1000 classes: LiteRT's int8 reference
  softmax ends the process when a row's fixed-point sum of exponentials reaches 512 (its final division by a power
  of two then needs a shift of 32); with random weights the 1000 logits are close, the sum is near 1000. The host
  runs such a softmax as a float softmax rounded once (runtime/long_softmax.py); the program runs and matches
  PyTorch's quantized model.

Bounds, in output steps against PyTorch's quantized model (convert_pt2e): the attention block chains two int8
batch matmuls around an int8 softmax whose output has 256 levels; each int8 op rounds once where PyTorch's
reference rounds its float result once, and the softmax's fixed-point exponential (LiteRT's reference, which the NPU
follows) differs from PyTorch's float exp by up to one output step: 3 steps for the block, 4 for the whole Swin
(two such blocks plus patch merging and the classifier).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from executorch_neutron import lower

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import pte_steps  # noqa: E402


class RelativePositionBias(nn.Module):
    """Swin's bias, added to an input as the attention scores are: a parameter table indexed, permuted, copied."""

    def __init__(self, heads=2, window=4):
        super().__init__()
        n = window * window
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
        self.register_buffer("index", torch.randint(0, (2 * window - 1) ** 2, (n * n,),
                                                    generator=torch.Generator().manual_seed(1)), persistent=False)
        self.n = n

    def forward(self, x):
        return x + self.table[self.index].view(self.n, self.n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)


class ConvBN(nn.Module):
    def __init__(self, c1, c2, k=1, groups=1):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(c1, c2, k, padding=k // 2, groups=groups, bias=False), nn.BatchNorm2d(c2)

    def forward(self, x):
        return self.bn(self.conv(x))


class C2PSAAttention(nn.Module):
    """The attention of YOLO11's C2PSA/PSABlock as the issue describes it."""

    def __init__(self, dim=128, heads=2, attn_ratio=0.5):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.key_dim = int(self.head_dim * attn_ratio)
        self.scale = self.key_dim ** -0.5
        self.qkv = ConvBN(dim, dim + 2 * self.key_dim * heads)
        self.proj, self.pe = ConvBN(dim, dim), ConvBN(dim, dim, 3, groups=dim)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(x).view(b, self.heads, 2 * self.key_dim + self.head_dim, h * w).split(
            [self.key_dim, self.key_dim, self.head_dim], dim=2)
        attn = ((q.transpose(-2, -1) @ k) * self.scale).softmax(dim=-1)
        return self.proj((v @ attn.transpose(-2, -1)).view(b, c, h, w) + self.pe(v.reshape(b, c, h, w)))


class Swin(nn.Module):
    def __init__(self):
        super().__init__()
        from transformers import SwinConfig, SwinForImageClassification

        config = SwinConfig(image_size=32, patch_size=4, num_channels=3, embed_dim=16, depths=[1, 1],
                            num_heads=[2, 2], window_size=4, num_labels=10)
        self.model = SwinForImageClassification(config)

    def forward(self, x):
        return self.model(pixel_values=x).logits


CASES = {
    "swin_relative_position_bias": (RelativePositionBias, (1, 2, 16, 16), 1),
    "c2psa_attention": (C2PSAAttention, (1, 128, 5, 5), 3),
    "swin_small_config": (Swin, (1, 3, 32, 32), 4),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_runs_on_the_host_and_matches_pytorch(case):
    build, shape, bound = case
    torch.manual_seed(0)
    model = build().eval()
    samples = [(torch.randn(*shape),) for _ in range(4)]
    result = lower(model, samples[0], samples)  # the host check runs the program once: it must not fail
    assert pte_steps(result, samples) <= bound


class WideSoftmax(nn.Module):
    """A classifier head: 1000 classes, softmax. Small weights make the logits close (as random weights do)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 1000)
        nn.init.uniform_(self.linear.weight, -1e-3, 1e-3)
        nn.init.zeros_(self.linear.bias)

    def forward(self, x):
        return self.linear(x).softmax(-1)


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
def test_a_softmax_over_1000_classes_runs_and_matches_pytorch(target):
    """LiteRT's int8 reference softmax aborts on this head (runtime/long_softmax.py): the host runs it as a float
    softmax rounded once, which PyTorch's quantized model also computes (its softmax is float between a dequantize
    and a quantize): within 1 step."""
    torch.manual_seed(0)
    samples = [(torch.randn(1, 16),) for _ in range(4)]
    result = lower(WideSoftmax().eval(), samples[0], samples, target=target)
    assert len(result.report.partitions) == 1 and not result.report.rejections
    assert pte_steps(result, samples) <= 1

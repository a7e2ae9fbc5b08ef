"""Cases where a Neutron hardware or SDK limit of the operator registry and Vela's own limits disagree: the table
shared by tests/ethos_u/test_neutron_limits.py and benchmarks/ethos_u_scope.py.

Each case: a model, its input shape (distinct H, W, C), the constraint profile it is lowered with, the edge op it
is about, and what an Ethos-U target must do with that op: "npu" (Vela runs it: no Neutron limit may refuse it),
or words of Vela's rule when Vela puts the operator on the CPU (then it stays on the CPU with Vela's reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from harness import Fn, Param


@dataclass(frozen=True)
class Case:
    make: Callable[[], nn.Module]
    shape: tuple[int, ...]
    op: str
    ethos_u: str  # "npu", or words of the Vela rule that keeps the op on the CPU
    constraints: str = "sdk-current"


def _constant_weights(conv: nn.Conv2d) -> nn.Conv2d:
    with torch.no_grad():
        conv.weight.fill_(0.01)
    return conv


def _seq(*mods):
    return lambda: nn.Sequential(*mods)


#: refused on an Ethos-U target before with a Neutron reason; Vela runs them
DELEGATED = {
    # 65536 weights per output channel: one over Neutron's 65535 weight slots, within Vela's weight-sum limit
    "conv_65536_weights_per_channel": Case(lambda: nn.Conv2d(4096, 8, 4), (1, 4096, 6, 5),
                                           "aten.convolution.default", "npu"),
    "softmax_2100_classes": Case(lambda: nn.Softmax(dim=-1), (1, 3, 2100), "aten._softmax.default", "npu"),
    # constraints="documented": Neutron's documented table; an Ethos-U target ignores the profile
    "documented_sub": Case(lambda: Fn(lambda self, x: torch.relu(x) - x), (1, 6, 9, 11), "aten.sub.Tensor", "npu",
                           "documented"),
    "documented_max_pool_stride_3": Case(_seq(nn.MaxPool2d(3, stride=3)), (1, 5, 15, 12),
                                         "aten.max_pool2d_with_indices.default", "npu", "documented"),
    "documented_avg_pool_count_pad": Case(_seq(nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=True)),
                                          (1, 7, 11, 13), "aten.avg_pool2d.default", "npu", "documented"),
    "documented_clamp_bounds": Case(lambda: Fn(lambda self, x: torch.clamp(x, -0.5, 0.75)), (1, 3, 10, 14),
                                    "aten.clamp.default", "npu", "documented"),
    "documented_add_broadcast": Case(lambda: Param(torch.add, 1, 6, 1, 1), (1, 6, 8, 5), "aten.add.Tensor", "npu",
                                     "documented"),
    "documented_softmax_last_dim": Case(lambda: nn.Softmax(dim=-1), (1, 4, 6, 10), "aten._softmax.default", "npu",
                                        "documented"),
    "documented_mean_channels": Case(lambda: Fn(lambda self, x: x.mean(dim=1, keepdim=True)), (1, 12, 7, 9),
                                     "aten.mean.dim", "npu", "documented"),
    "documented_prelu_rank3": Case(lambda: nn.PReLU(5), (1, 5, 18), "aten.prelu.default", "npu", "documented"),
    # Vela broadcasts both operands ("the union of the input shapes equals the OFM shape"); Neutron one only (and
    # passes/broadcast_operand_to_expand.py expands one first unless, as here, the copies count 17 or 19: primes
    # above what expand_to_cat writes)
    "add_broadcast_both_ways": Case(lambda: Fn(lambda self, x: x[:, :, :1, :] + x[:, :, :, :1]), (1, 6, 17, 19),
                                    "aten.add.Tensor", "npu"),
}

#: Vela puts these on the CPU: they stay on the CPU with Vela's reason (before: a Neutron reason, or a payload
#: that Vela refused at preprocess, when no Neutron limit happened to cover Vela's)
REFUSED = {
    "transposed_conv_stride_3": Case(lambda: nn.ConvTranspose2d(8, 8, 3, stride=3), (1, 8, 5, 7),
                                     "aten.convolution.default", "stride (H, W) (1, 1) or (2, 2)"),
    "nearest_upsample_3x": Case(lambda: nn.Upsample(scale_factor=3, mode="nearest"), (1, 4, 5, 6),
                                "aten.upsample_nearest2d.vec", "Resize:"),
    "bilinear_upsample_4x": Case(lambda: nn.Upsample(scale_factor=4, mode="bilinear"), (1, 3, 5, 7),
                                 "aten.upsample_bilinear2d.vec", "half-pixel"),
    # Vela's stride rule of convolutions: stride H above 3 only for a one-row OFM (found in review: a Vela error)
    "conv_stride_4_rows": Case(lambda: nn.Conv2d(3, 8, 5, stride=4, padding=2), (1, 3, 16, 16),
                               "aten.convolution.default", "stride H 4"),
    # the same size is Vela's general exception, but not its half-pixel rule's (found by the backend suite)
    "bilinear_same_size_half_pixel": Case(lambda: nn.Upsample(size=(5, 7), mode="bilinear"), (1, 3, 5, 7),
                                          "aten.upsample_bilinear2d.vec", "half-pixel"),
    "transposed_conv_stride_1x2": Case(lambda: nn.ConvTranspose2d(4, 4, 3, stride=(1, 2)), (1, 4, 5, 7),
                                       "aten.convolution.default", "stride (H, W) (1, 1) or (2, 2)"),
    "nearest_upsample_2x4": Case(lambda: nn.Upsample(scale_factor=(2, 4), mode="nearest"), (1, 3, 6, 5),
                                 "aten.upsample_nearest2d.vec", "Resize:"),
    # all weights equal: every one quantizes to 127, 67500 x 127 = 8572500 > 8323072 (Vela: CPU)
    "conv_weight_sum_over_limit": Case(lambda: _constant_weights(nn.Conv2d(2700, 8, 5)), (1, 2700, 9, 7),
                                       "aten.convolution.default", "absolute sum of the weights"),
    "sum_over_depth": Case(lambda: Fn(lambda self, x: x.sum(dim=(2, 3), keepdim=True)), (1, 5, 8, 6),
                           "aten.sum.dim_IntList", "reduction over the depth"),
    "avg_pool_stride_4_same": Case(lambda: nn.AvgPool2d(5, stride=4, padding=2, count_include_pad=False),
                                   (1, 4, 17, 21), "aten.avg_pool2d.default", "Stride > 3"),
}

#: a reduction over the last dim alone of an IFM with no unit axis: Vela refuses MEAN over the depth axis there, so
#: ops/reduce.py writes it on a [rows, 1, last] view (before: on the CPU with Vela's depth rule)
LAST_DIM = {
    "mean_over_depth": Case(lambda: Fn(lambda self, x: x.mean(dim=-1, keepdim=True)), (1, 6, 7, 9), "aten.mean.dim",
                            "npu"),
    "mean_batch_2": Case(lambda: Fn(lambda self, x: (x * 2.0).mean(dim=-1)), (2, 3, 5, 16), "aten.mean.dim", "npu"),
    "sum_over_depth_rank4": Case(lambda: Fn(lambda self, x: x.sum(dim=3, keepdim=True)), (1, 4, 6, 10),
                                 "aten.sum.dim_IntList", "npu"),
}

ALL = {**DELEGATED, **REFUSED, **LAST_DIM}


#: the last accepted case of each Vela limit that ethos_u/constraints.py names itself (Vela checks it inline, with
#: no class data to read): Vela compiles them; the first refused cases are in REFUSED (transposed_conv_stride_3,
#: nearest_upsample_3x, bilinear_upsample_4x), which Vela refuses without our limits
VELA_INLINE_ACCEPTED = {
    "conv_stride_4_one_row": Case(lambda: nn.Conv2d(3, 8, 4, stride=4), (1, 3, 4, 16), "aten.convolution.default",
                                  "npu"),
    "transposed_conv_stride_2": Case(lambda: nn.ConvTranspose2d(8, 8, 3, stride=2), (1, 8, 5, 7),
                                     "aten.convolution.default", "npu"),
    "nearest_upsample_8x": Case(lambda: nn.Upsample(scale_factor=8, mode="nearest"), (1, 4, 5, 6),
                                "aten.upsample_nearest2d.vec", "npu"),
    "bilinear_upsample_2x_half_pixel": Case(lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 3, 5, 7),
                                            "aten.upsample_bilinear2d.vec", "npu"),
}

"""The only place that knows about NCHW <-> NHWC.

Inside a partition every rank-4 activation is stored channels-last (NHWC); all other ranks keep PyTorch's order.
A `Layout` says how a value's logical (PyTorch) shape maps to its physical (TFLite) shape. Converters ask this
module for physical shapes, axes and permutations; they never write a permutation by hand.

At the partition boundary, NXP's `use_neutron_for_format_conversion` decides (`boundary_layout`): True (default)
keeps ExecuTorch's channels-first tensors at the boundary, the partition converts with TRANSPOSE ops inside (so the
NPU does it) and the payload's format flags are 0; False makes rank-4 boundary tensors channels-last, the format
flags 1, and the runtime transposes on the CPU.

How a layout TRANSPOSE is written is the target's `transpose_form` (target.TRANSPOSE_FORMS): one rank-4
TRANSPOSE, or the same data movement collapsed to rank 3 (`collapsed_transpose`), which Vela runs in one pass
where it splits the rank-4 one in two (docs/ethos_u_vs_tflite.md has the cycles per target). A flatten of a
channels-last value that only linear layers read is reshaped as it lies (`channels_last_flatten_columns`).
"""

from __future__ import annotations

from enum import Enum
from typing import Sequence

import numpy as np

NCHW_TO_NHWC = (0, 2, 3, 1)  # also the dim order of a channels-last rank-4 tensor in ExecuTorch
NHWC_TO_NCHW = (0, 3, 1, 2)

#: PyTorch convolution weight [O, I, kH, kW] -> TFLite CONV_2D filter [O, kH, kW, I].
CONV_WEIGHT_PERM = NCHW_TO_NHWC
#: PyTorch depthwise weight [C*M, 1, kH, kW] -> TFLite DEPTHWISE_CONV_2D filter [1, kH, kW, C*M]; also PyTorch
#: transposed-convolution weight [I, O, kH, kW] -> TFLite TRANSPOSE_CONV filter [O, kH, kW, I].
OUT_LAST_WEIGHT_PERM = (1, 2, 3, 0)


class Layout(Enum):
    NATURAL = "natural"  # physical order == PyTorch order
    CHANNELS_LAST = "channels_last"  # rank 4: NCHW logical stored as NHWC

    @staticmethod
    def preferred(rank: int) -> "Layout":
        """The layout a partition keeps a value of this rank in."""
        return Layout.CHANNELS_LAST if rank == 4 else Layout.NATURAL


def stored_channels_last(value) -> bool:
    """Whether a rank-4 tensor (or an FX node's fake tensor) is stored channels-last: ExecuTorch's dim order
    (0, 2, 3, 1), as `model.to(memory_format=torch.channels_last)` and channels-last inputs give. A tensor with a
    size-1 channel or spatial extent is dense in both orders; its strides say which one the program keeps."""
    val = value.meta.get("val") if hasattr(value, "meta") else value
    return getattr(val, "ndim", 0) == 4 and tuple(val.dim_order()) == NCHW_TO_NHWC


def boundary_layout(rank: int, neutron_converts: bool, channels_last: bool = False) -> Layout:
    """Layout of a partition input/output of this rank (`neutron_converts`: use_neutron_for_format_conversion).
    A tensor ExecuTorch stores channels-last (`channels_last`) is NHWC in memory already: the partition takes or
    gives it as it is (format flag 1, which the runtime passes straight through), with no transpose anywhere."""
    return Layout.preferred(rank) if channels_last or not neutron_converts else Layout.NATURAL


def format_flag(layout: Layout) -> int:
    """The payload header's format flag for a boundary tensor: 1 = channels-last (the runtime transposes)."""
    return 1 if layout is Layout.CHANNELS_LAST else 0


def to_physical_perm(rank: int, layout: Layout) -> tuple[int, ...]:
    """perm such that physical_shape[i] == logical_shape[perm[i]]."""
    if layout is Layout.CHANNELS_LAST:
        if rank != 4:
            raise ValueError(f"channels-last layout needs rank 4, got rank {rank}")
        return NCHW_TO_NHWC
    return tuple(range(rank))


def physical_shape(shape: Sequence[int], layout: Layout) -> tuple[int, ...]:
    perm = to_physical_perm(len(shape), layout)
    return tuple(int(shape[p]) for p in perm)


def physical_axis(dim: int, rank: int, layout: Layout) -> int:
    """Where logical dimension `dim` (negative allowed) lives physically."""
    dim = dim % rank if rank else 0
    return to_physical_perm(rank, layout).index(dim)


def transpose_perm(rank: int, src: Layout, dst: Layout) -> tuple[int, ...]:
    """TFLite TRANSPOSE perm that takes physical data in `src` layout to `dst` layout."""
    src_perm = to_physical_perm(rank, src)
    dst_perm = to_physical_perm(rank, dst)
    return tuple(src_perm.index(d) for d in dst_perm)


def collapsed_transpose(src_shape: Sequence[int], perm: Sequence[int]):
    """(rank-3 source shape, rank-3 perm) doing what TRANSPOSE(`src_shape`, `perm`) does when `perm` is NCHW->NHWC
    or NHWC->NCHW (it swaps two groups of axes behind the batch); None for any other perm."""
    n, a, b, c = (int(d) for d in src_shape) if len(src_shape) == 4 else (0, 0, 0, 0)
    if tuple(perm) == NCHW_TO_NHWC:  # [N, C, H*W] -> [N, H*W, C]
        return (n, a, b * c), (0, 2, 1)
    if tuple(perm) == NHWC_TO_NCHW:  # [N, H*W, C] -> [N, C, H*W]
        return (n, a * b, c), (0, 2, 1)
    return None


#: TFLite metadata entry naming the tensors that hold a channels-last flatten: JSON {tensor name: the flattened
#: value's logical rank-4 shape} (numerics.py reads such a tensor back in PyTorch's order)
FLATTEN_METADATA = "executorch_neutron.channels_last_flatten"


def channels_last_flatten_columns(shape: Sequence[int]) -> tuple[int, ...]:
    """A rank-4 [N, C, H, W] value stored NHWC, reshaped as it lies to [N, H*W*C]: column i holds PyTorch's
    flatten column `perm[i]` (a FULLY_CONNECTED reading it takes its weight columns in this order)."""
    _, c, h, w = (int(d) for d in shape)
    return tuple(int(i) for i in np.arange(c * h * w).reshape(c, h, w).transpose(1, 2, 0).reshape(-1))


def unflatten_channels_last(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A channels-last flatten [N, H*W*C] of a logical `shape` [N, C, H, W] in PyTorch's flatten order [N, C*H*W]."""
    return from_channels_last(x.reshape(physical_shape(shape, Layout.CHANNELS_LAST))).reshape(x.shape[0], -1)


def logical_perm_to_physical(perm: Sequence[int], src: Layout, dst: Layout) -> tuple[int, ...]:
    """Physical TRANSPOSE perm for a logical permute from a value in `src` layout to a result in `dst` layout."""
    rank = len(perm)
    src_perm = to_physical_perm(rank, src)
    dst_perm = to_physical_perm(rank, dst)
    # physical out axis i holds logical out dim dst_perm[i] == logical in dim perm[dst_perm[i]]
    return tuple(src_perm.index(perm[d]) for d in dst_perm)


def is_memory_preserving(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """True when transposing `shape` by `perm` only moves size-1 dimensions (a reshape does the same)."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def to_channels_last(x: np.ndarray, flag: int = 1) -> np.ndarray:
    """A logical (NCHW) rank-4 array as the NHWC array a partition takes when its format flag is 1."""
    return np.ascontiguousarray(np.transpose(x, NCHW_TO_NHWC)) if flag == 1 and x.ndim == 4 else x


def from_channels_last(x: np.ndarray, flag: int = 1) -> np.ndarray:
    """A partition's NHWC rank-4 output (format flag 1) back in logical NCHW order."""
    return np.ascontiguousarray(np.transpose(x, NHWC_TO_NCHW)) if flag == 1 and x.ndim == 4 else x

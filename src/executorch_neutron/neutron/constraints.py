"""Neutron's hardware and SDK limits as operator-registry constraints tagged for the Neutron back end
(`backends=NEUTRON`), and its own reasons for operators without a kernel; `register()` adds them to the registry
(backends.register_limits calls it, then Ethos-U's; importing this module changes nothing).

Each limit is written once: its rule's text (SUPPORTED_OPS.md lists it, the numbers from neutron/limits.py) and a
check that returns what it found in a node; the rejection reads "<found>: <rule>" (`Constraint.reason`). Most are
rows of Neutron's operator tables, the constraint profiles: `documented` (NXP's operator documentation) and
`sdk-current` (what NXP's current eIQ Neutron SDK delegates); a limit without a profile holds in both. They are
appended to each op's entry after the front end's structural constraints, in this file's order.
"""

from __future__ import annotations

import math
from typing import Callable

from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

from ..ops import registry
from ..ops.args import pool_args
from ..ops.conv import transposed_kernel
from ..ops.fusion import SUPPORTED_BOUNDS_TEXT, activation_bounds, activation_codes
from ..ops.limits import ROWS, one_of
from ..ops.pooling import POOL3D_LEFT, pads_explicitly, pool3d_left
from ..ops.registry import ALL_PROFILES, CheckFn, Constraint, Limit
from ..ops.shape import EXPAND_LEFT
from ..target import NEUTRON as NEUTRON_KIND
from ..tflite.layout import Layout, physical_axis
from .limits import (CONV_WEIGHT_SLOTS, POOL_STRIDE_SDK, POOL_STRIDES, SOFTMAX_CHANNELS_BELOW, SOFTMAX_CHANNELS_SDK,
                     TRANSPOSED_CONV_STRIDE, UPSAMPLE_SCALES, UPSAMPLE_SCALES_SDK)

_aten = exir_ops.edge.aten

#: The back ends a Neutron limit applies to: Neutron's targets (Ethos-U targets apply Vela's limits instead).
NEUTRON = frozenset({NEUTRON_KIND})
DOCUMENTED = frozenset({"documented"})
SDK_CURRENT = frozenset({"sdk-current"})


def _limit(ops, text: str, profiles=ALL_PROFILES, hint: str | None = None) -> Callable[[CheckFn], Limit]:
    """Decorator: `found(args, ctx)` (None, or what in the node breaks rule `text`) as a Neutron limit on `ops`.
    `ops` name every op of the entries they belong to, so the check sees their nodes only, the ATen node of a
    preserved op before decomposition too (a refused one is then decomposed)."""
    return lambda found: Limit(frozenset(ops), Constraint(text, found, hint, frozenset(profiles), NEUTRON))


_CONV = {_aten.convolution.default}
_MAX_POOL = {_aten.max_pool2d.default, _aten.max_pool2d_with_indices.default}
_UPSAMPLE = {_aten.upsample_bilinear2d.vec, _aten.upsample_nearest2d.vec}
_PAD_CHANNELS = "pad the channel count to a multiple of {num_macs}"


# -- convolution

@_limit(_CONV, "grouped (not depthwise): output channels per group % {num_macs} == 0", DOCUMENTED,
        hint="make the output channels per group a multiple of {num_macs}")
def _group_channels(a, ctx):
    g, c = a["groups"], a.shape("input")[1]
    per_group = a.out_shape[1] // g
    if a["transposed"] or g in (1, c) or per_group % ctx.num_macs == 0:
        return None
    return f"groups {g} with {per_group} output channels per group"


@_limit(_CONV, f"transposed: stride <= {TRANSPOSED_CONV_STRIDE} and <= kernel")
def _transposed_stride(a, ctx):
    k, s = transposed_kernel(a), list(a["stride"])
    if a["transposed"] and any(x > TRANSPOSED_CONV_STRIDE or x > kk for x, kk in zip(s, k)):
        return f"transposed convolution stride {s} with kernel {k}"
    return None


@_limit(_CONV, f"kernel_h * kernel_w * round_up(in_channels, {{num_macs}}) <= {CONV_WEIGHT_SLOTS}")
def _kernel_size(a, ctx):
    k = transposed_kernel(a) if a["transposed"] else list(a.shape("weight")[2:])
    kh, kw = ([1] + k)[-2:]
    in_c = a.shape("input")[1]
    size = kh * kw * -(-in_c // ctx.num_macs) * ctx.num_macs
    return None if size <= CONV_WEIGHT_SLOTS else f"kernel {kh}x{kw} with {in_c} input channels: {size} weight slots"


# -- pooling and means

@_limit(_MAX_POOL, "input channels % {num_macs} == 0", DOCUMENTED, hint=_PAD_CHANNELS)
def _pool_channels(a, ctx):
    c = a.shape("self")[1]
    return f"input channels {c}" if c % ctx.num_macs else None


@_limit(_MAX_POOL, "batch size 1", DOCUMENTED)
def _pool_batch(a, ctx):
    n = a.shape("self")[0]
    return None if n == 1 else f"batch {n}"


@_limit(_MAX_POOL, f"stride {one_of(POOL_STRIDES)}", DOCUMENTED)
def _pool_stride(a, ctx):
    s = pool_args(a.node).stride
    return None if all(x in POOL_STRIDES for x in s) else f"stride {s}"


@_limit(_MAX_POOL, f"stride <= {POOL_STRIDE_SDK}", SDK_CURRENT)
def _pool_stride_sdk(a, ctx):
    s = pool_args(a.node).stride
    return None if all(x <= POOL_STRIDE_SDK for x in s) else f"stride {s}"


@_limit({_aten.avg_pool2d.default}, "count_include_pad False (or no padding)", DOCUMENTED)
def _count_include_pad(a, ctx):
    return f"count_include_pad True with padding {pool_args(a.node).padding}" if pads_explicitly(a) else None


@_limit({_aten.mean.dim}, "4D tensors only, dims [-1, -2] or [-2, -1]", DOCUMENTED)
def _mean_dims(a, ctx):
    shape = a.shape("self")
    if len(shape) != 4:
        return f"rank {len(shape)}"
    dims = sorted(d % 4 for d in (a["dim"] or []))
    return None if dims == [2, 3] else f"dims {a['dim']}"


# -- softmax

def _softmax_channels(a) -> int:
    shape = a.shape("self")
    return shape[a["dim"] % len(shape)]


@_limit({_aten._softmax.default}, "rank > 1, softmax over the channel dimension (dim 1 for rank 4, else the last)",
        DOCUMENTED)
def _softmax_dim(a, ctx):
    rank = len(a.shape("self"))
    if rank < 2:
        return f"rank {rank}"
    if physical_axis(a["dim"], rank, Layout.preferred(rank)) != rank - 1:
        return f"softmax over dim {a['dim']} of a rank-{rank} tensor"
    return None


@_limit({_aten._softmax.default}, f"channels % {{num_macs}} == 0 and channels < {SOFTMAX_CHANNELS_BELOW}", DOCUMENTED,
        hint="pad the class count to a multiple of {num_macs}")
def _softmax_channels_documented(a, ctx):
    c = _softmax_channels(a)
    return f"{c} channels" if c % ctx.num_macs or c >= SOFTMAX_CHANNELS_BELOW else None


@_limit({_aten._softmax.default}, f"channels <= {SOFTMAX_CHANNELS_SDK}", SDK_CURRENT)
def _softmax_channels_sdk(a, ctx):
    c = _softmax_channels(a)
    return None if c <= SOFTMAX_CHANNELS_SDK else f"{c} channels"


# -- upsampling

def _scales(a, align_corners: bool = False) -> tuple[float, float]:
    """(H scale, W scale) of an upsample node; with align_corners (out - 1) / (in - 1)."""
    (h, w), (oh, ow) = a.shape("input")[2:], a.out_shape[2:]
    return ((oh - 1) / (h - 1), (ow - 1) / (w - 1)) if align_corners else (oh / h, ow / w)


def _found_scales(sh: float, sw: float) -> str:
    return f"scales H {sh:g}, W {sw:g}"


def _rank_found(a) -> str | None:
    r = len(a.shape("input"))
    return None if r == 4 else f"a rank-{r} input"


@_limit(_UPSAMPLE, "channels % {num_macs} == 0", DOCUMENTED, hint=_PAD_CHANNELS)
def _up_channels(a, ctx):
    c = a.shape("input")[1]
    return None if c % ctx.num_macs == 0 else f"channels {c}"


def _equal_scales(a) -> str | None:
    """None when H and W scales are equal and one of UPSAMPLE_SCALES, else what was found."""
    if _rank_found(a):
        return _rank_found(a)
    sh, sw = _scales(a)
    return None if sh == sw and sh in UPSAMPLE_SCALES else _found_scales(sh, sw)


def _sdk_scales(a, align_corners: bool = False) -> str | None:
    """None when H and W scales are each one of UPSAMPLE_SCALES_SDK, else what was found."""
    if _rank_found(a):
        return _rank_found(a)
    if align_corners and 1 in a.shape("input")[2:]:
        return "align_corners with an input of size 1"
    sh, sw = _scales(a, align_corners)
    if sh in UPSAMPLE_SCALES_SDK and sw in UPSAMPLE_SCALES_SDK:
        return None
    return _found_scales(sh, sw) + (" (align_corners)" if align_corners else "")


@_limit(_UPSAMPLE, f"H scale == W scale, {one_of(UPSAMPLE_SCALES)}", DOCUMENTED)
def _up_scale(a, ctx):
    return _equal_scales(a)


@_limit({_aten.upsample_bilinear2d.vec}, f"H and W scales each {one_of(UPSAMPLE_SCALES_SDK)} (with align_corners: "
        f"(out - 1) / (in - 1)), or H scale == W scale, {one_of(UPSAMPLE_SCALES)}", SDK_CURRENT)
def _bilinear_scales(a, ctx):
    found = _sdk_scales(a, bool(a["align_corners"]))
    return None if found is None or _equal_scales(a) is None else found


@_limit({_aten.upsample_nearest2d.vec}, f"H and W scales each {one_of(UPSAMPLE_SCALES_SDK)}", SDK_CURRENT)
def _nearest_scales(a, ctx):
    return _sdk_scales(a)


# -- elementwise

def _is_scalar_operand(a, name: str) -> bool:
    return not isinstance(a[name], Node) or math.prod(a.shape(name)) == 1


@_limit({_aten.add.Tensor, _aten.sub.Tensor}, "inputs of equal shape, or a scalar operand", DOCUMENTED)
def _equal_shapes(a, ctx):
    s, o = a.shape("self"), a.shape("other")
    if s == o or _is_scalar_operand(a, "self") or _is_scalar_operand(a, "other"):
        return None
    return f"input shapes {list(s)} and {list(o)}"


@_limit({_aten.mul.Tensor, _aten.div.Tensor}, "operands of equal rank, or a scalar operand", DOCUMENTED)
def _equal_rank_or_scalar(a, ctx):
    if not isinstance(a["other"], Node):
        return None
    s, o = a.shape("self"), a.shape("other")
    if len(s) == len(o) or 1 in (math.prod(s), math.prod(o)):
        return None
    return f"operand ranks {len(s)} and {len(o)}"


def _broadcast_found(a) -> str | None:
    if not isinstance(a["other"], Node):
        return None
    n = math.prod(a.out_shape)
    s, o = a.shape("self"), a.shape("other")
    if n in (math.prod(s), math.prod(o)):
        return None
    return f"input shapes {list(s)} and {list(o)} both broadcast to the output {list(a.out_shape)}"


@_limit({_aten.add.Tensor, _aten.sub.Tensor, _aten.div.Tensor, _aten.maximum.default, _aten.minimum.default},
        "one operand has as many elements as the output (the other, of any rank, broadcasts onto it)", SDK_CURRENT)
def _broadcast(a, ctx):
    return _broadcast_found(a)


@_limit({_aten.mul.Tensor}, "one operand has as many elements as the output (the other, of any rank, broadcasts "
        "onto it), or operands of equal rank (any broadcasting)", SDK_CURRENT)
def _mul_broadcast(a, ctx):
    if isinstance(a["other"], Node) and len(a.shape("self")) == len(a.shape("other")):
        return None
    return _broadcast_found(a)


@_limit({_aten.mul.Tensor}, "tensor size % {num_macs} == 0", DOCUMENTED)
def _size_multiple(a, ctx):
    size = math.prod(a.out_shape)
    return None if size % ctx.num_macs == 0 else f"tensor size {size}"


@_limit({_aten.div.Tensor}, "one dimension % {num_macs} == 0, or scalar division")
def _div_dims(a, ctx):
    if not isinstance(a["other"], Node) or math.prod(a.shape("other")) == 1:
        return None
    shape = a.out_shape
    return None if any(s % ctx.num_macs == 0 for s in shape) else f"output shape {list(shape)}"


# -- activations

@_limit({_aten.hardtanh.default, _aten.clamp.default}, f"bounds {SUPPORTED_BOUNDS_TEXT}", DOCUMENTED)
def _bounds(a, ctx):
    return f"bounds {activation_bounds(a.node)}" if activation_codes(a.node) is None else None


@_limit({_aten.prelu.default}, f"rank 4, channels % {{num_macs}} == 0, flat size / channels <= {ROWS}", DOCUMENTED)
def _prelu_shape(a, ctx):  # ROWS: as many rows as one SOFTMAX op the converter writes (one kernel limit)
    shape = a.shape("self")
    if len(shape) != 4:
        return f"rank {len(shape)}"
    c = shape[1]
    if c % ctx.num_macs:
        return f"channels {c}"
    rows = math.prod(shape) // c
    return f"flat size / channels = {rows}" if rows > ROWS else None


# -- matrix products and data movement

@_limit({_aten.bmm.default}, "width and channel dims of both arguments % {num_macs} == 0 (documented table; NXP's "
        "current release does not check them)", DOCUMENTED, hint="pad the matrix sizes to multiples of {num_macs}")
def _bmm_dims(a, ctx):
    for name in ("self", "mat2"):
        shape = a.shape(name)
        if any(d % ctx.num_macs for d in shape[1:]):
            return f"{name} shape {list(shape)}"
    return None


@_limit({_aten.cat.default}, "input channels % {num_macs} == 0 and output channels % {num_macs} == 0 (channels: "
        "dim 1 of a 4D tensor, else the last dim)", DOCUMENTED, hint="pad the channel counts to a multiple of {num_macs}")
def _cat_channels(a, ctx):
    shapes = [a.shape_of(t) for t in a["tensors"]] + [a.out_shape]
    ch = 1 if len(shapes[0]) == 4 else len(shapes[0]) - 1
    return next((f"channels {s[ch]}" for s in shapes if s[ch] % ctx.num_macs), None)


@_limit({_aten.constant_pad_nd.default}, "padding of H or W only (the spatial dims of a 3D or 4D tensor), "
        "non-negative", DOCUMENTED)
def _pad_hw(a, ctx):
    pad = list(a["pad"])
    rank = len(a.shape("self"))
    if rank not in (3, 4) or len(pad) > 2 * min(max(rank - 2, 0), 2):
        return f"padding {pad} of a rank-{rank} tensor"
    return f"negative padding {pad}" if any(p < 0 for p in pad) else None


#: Neutron's limits in the order they are added (each op's entry checks its own in this order)
LIMITS: tuple[Limit, ...] = (
    _group_channels, _transposed_stride, _kernel_size,
    _pool_channels, _pool_batch, _pool_stride, _pool_stride_sdk, _count_include_pad, _mean_dims,
    _softmax_dim, _softmax_channels_documented, _softmax_channels_sdk,
    _up_channels, _up_scale, _bilinear_scales, _nearest_scales,
    _equal_shapes, _equal_rank_or_scalar, _broadcast, _mul_broadcast, _size_multiple, _div_dims,
    _bounds, _prelu_shape, _bmm_dims, _cat_channels, _pad_hw,
)

#: Operators Neutron has no kernel for, and why (edge ops -> reason; `detail` names what in a node left it there)
NO_KERNEL = (
    ((_aten.argmax.default, _aten.argmin.default),
     "ARG_MAX / ARG_MIN are in neither Neutron's documented operator table nor NXP's current converter set, and the "
     "result is an int64 index, not an int8 tensor", None),
    ((_aten.expand_copy.default,),
     "a broadcast copy (TILE / BROADCAST_TO) is not in Neutron's operator table; " + EXPAND_LEFT, None),
    ((_aten._adaptive_avg_pool3d.default, _aten.avg_pool3d.default, _aten.max_pool3d_with_indices.default),
     "Neutron pools 2-D planes only; " + POOL3D_LEFT, pool3d_left),
)


def register() -> None:
    """Add Neutron's limits and no-kernel reasons to the operator registry (idempotent)."""
    registry.add_limits(LIMITS, NO_KERNEL, NEUTRON)

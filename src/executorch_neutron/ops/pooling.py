"""Pooling and spatial means: max_pool2d, avg_pool2d, adaptive_avg_pool2d (to 1x1), mean over H and W.

TFLite int8 MAX_POOL_2D / AVERAGE_POOL_2D need equal input and output quantization (the quantizer shares
them); average pooling counts padding through an explicit PAD (count_include_pad=True) or excludes it (SAME
padding). A spatial mean (global pooling, or a `mean` over H and W with shared or its own output quantization:
squeeze-excitation, a mean before a classifier) is written as a DEPTHWISE_CONV_2D whose H x W kernel holds
1 / (H * W) (int8 127 at scale 1 / (127 * H * W): exact), up to `MEAN_AS_CONV_WINDOW` per side (beyond it, MEAN):
one accumulation and one requantization, as every convolution, which meets PyTorch's quantized mean on all but the
rare values within 2**-(r+1) step below a half (r, the requantization's right shift: the reference kernels' rounding
doubling high multiply, then rounding shift; numerics.py). LiteRT's reference int8 MEAN rounds twice more
coarsely: it folds 1 / n into its multiplier as `(multiplier << shift) / n` with shift = floor(log2 n), so its first
rounding (the doubling high multiply) keeps only a few bits below the step (a quarter step for a 3 x 3 mean whose
output scale is its input's) and the final shift rounds again. Measured: it missed PyTorch's quantized mean by one
step on 13 % of the outputs of a 3 x 3 global average pool (shared quantization) and on about a third of a 12 x 10
mean that requantizes; a following classifier multiplies those steps (the executorch wheel's MobileNetV1-0.25 lost up
to 4 dB SQNR there).
"""

from __future__ import annotations

import numpy as np
import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..tflite.builder import Quant, options
from ..tflite.layout import Layout, physical_axis, stored_channels_last
from .args import pool_args, spatial
from .common import bias_storage, same_padding_matches, shared_quantization
from .reduce import reduce_dims
from .registry import constraint, register

_aten = exir_ops.edge.aten
A = torch.ops.aten


@constraint("rank-4 input")
def _rank4(a, ctx):
    r = len(a.shape("self"))
    return None if r == 4 else f"rank {r}"


@constraint("ceil_mode False")
def _no_ceil(a, ctx):
    return "ceil_mode True" if a["ceil_mode"] else None


@constraint("dilation 1 (a dilated max pool without padding arrives as slices and maximum where the table has "
            "MAXIMUM: passes/dilated_max_pool.py)")
def _dilation(a, ctx):
    pool = pool_args(a.node)
    if pool.dilation == [1, 1]:
        return None
    return f"dilation {pool.dilation} with padding {pool.padding}"


def pads_explicitly(a) -> bool:
    """avg_pool2d counting its zero padding: a PAD (with the zero point) before an unpadded average pool."""
    return bool(a["count_include_pad"]) and any(pool_args(a.node).padding)


@constraint("no divisor_override")
def _divisor(a, ctx):
    return None if a["divisor_override"] is None else f"divisor_override {a['divisor_override']}"


def _pool(ctx, a, builtin, explicit_padding: bool = False):
    b = ctx.builder
    x = ctx.value(a["self"], Layout.CHANNELS_LAST)
    pool = pool_args(a.node)
    k, s, p = pool.kernel, pool.stride, pool.padding
    src = x.tensor
    if explicit_padding:  # zeros (the zero point) that count in the average, as PyTorch's count_include_pad
        n, c, h, w = x.shape
        paddings = b.constant(a.node.name + "_paddings", np.asarray([[0, 0], [p[0], p[0]], [p[1], p[1]], [0, 0]],
                                                                     dtype=np.int32))
        src = b.tensor(a.node.name + "_padded", (n, h + 2 * p[0], w + 2 * p[1], c), np.int8, x.quant)
        b.op(schema.BuiltinOperator.PAD, [x.tensor, paddings], [src], options("PadOptionsT"))
        p = [0, 0]
    out = ctx.emit_output(a.node, Layout.CHANNELS_LAST, quant=x.quant)
    opts = options("Pool2DOptionsT", padding=schema.Padding.SAME if any(p) else schema.Padding.VALID,
                   strideH=s[0], strideW=s[1], filterHeight=k[0], filterWidth=k[1])
    b.op(builtin, [src], [out.tensor], opts)


@constraint("padding expressible as SAME padding (an average pool that counts its padding: an explicit PAD)")
def _same_padding(a, ctx):
    pool = pool_args(a.node)
    k, s, p = pool.kernel, pool.stride, pool.padding
    shape = a.shape("self")
    if any(p) and not (a.node.target == _aten.avg_pool2d.default and pads_explicitly(a)) and not all(same_padding_matches(shape[2 + i], k[i], s[i], 1, p[i]) for i in range(2)):
        return f"padding {p} with kernel {k}, stride {s} on {list(shape[2:])}"
    return None


MAX_POOL = (_rank4, _dilation, _no_ceil, _same_padding, shared_quantization())


@register(_aten.max_pool2d.default, constraints=MAX_POOL, int16=True)
def convert_max_pool2d(ctx, a):
    """2D max pooling."""
    _pool(ctx, a, schema.BuiltinOperator.MAX_POOL_2D)


@constraint("only the pooled values are used (not the indices)")
def _no_indices(a, ctx):
    used = {u.args[1] for u in a.node.users}
    return None if used <= {0} else "the max-pool indices are used"


@register(_aten.max_pool2d_with_indices.default, constraints=(_no_indices,) + MAX_POOL,
          quantize={"shared": (A.max_pool2d.default,)}, int16=True)
def convert_max_pool2d_with_indices(ctx, a):
    """2D max pooling whose indices are unused (what max_pool2d becomes in the edge dialect)."""
    _pool(ctx, a, schema.BuiltinOperator.MAX_POOL_2D)
    ctx.bind(ctx.output_node(a.node), ctx.value(a.node))


@register(_aten.avg_pool2d.default,
          constraints=(_rank4, _no_ceil, _divisor, _same_padding, shared_quantization()),
          quantize={"shared": (A.avg_pool2d.default,)}, int16=True)
def convert_avg_pool2d(ctx, a):
    """2D average pooling: padding excluded from the average (SAME padding), or counted (an explicit PAD of zeros
    before it, count_include_pad=True)."""
    _pool(ctx, a, schema.BuiltinOperator.AVERAGE_POOL_2D, explicit_padding=pads_explicitly(a))


#: the largest kernel side of a spatial mean written as a depthwise convolution (within every NPU's kernels)
MEAN_AS_CONV_WINDOW = 64


def mean_hw(ctx, a, keepdim: bool):
    """The mean over the spatial axes of a rank-4 value, int8 (or int16): a depthwise convolution when the window
    fits (shared or own output quantization alike), else MEAN over the NHWC spatial axes."""
    b = ctx.builder
    x = ctx.value(a["self"], Layout.CHANNELS_LAST)
    out = ctx.emit_output(a.node, Layout.CHANNELS_LAST if keepdim else Layout.NATURAL)
    h, w = a.shape("self")[2:]
    if max(h, w) <= MEAN_AS_CONV_WINDOW:
        _mean_as_depthwise(ctx, a, x, out, keepdim)
        return
    axes = sorted(physical_axis(d, 4, Layout.CHANNELS_LAST) for d in (2, 3))
    at = b.constant(a.node.name + "_axes", np.asarray(axes, dtype=np.int32))
    b.op(schema.BuiltinOperator.MEAN, [x.tensor, at], [out.tensor], options("ReducerOptionsT", keepDims=keepdim))


def _mean_as_depthwise(ctx, a, x, out, keepdim: bool) -> None:
    """The mean over H x W as a VALID depthwise convolution with weights 1 / (H * W) into `out` (through a
    [N, 1, 1, C] tensor and a RESHAPE when keepdim is False)."""
    b = ctx.builder
    n, c, h, w = a.shape("self")
    w_scale = 1.0 / (127 * h * w)
    weights = b.constant(a.node.name + "_mean_w", np.full((1, h, w, c), 127, dtype=np.int8),
                         Quant((w_scale,) * c, (0,) * c, 3))
    bias = b.constant(a.node.name + "_mean_b", np.zeros(c, dtype=bias_storage(x.quant)),
                      Quant((x.quant.scale[0] * w_scale,) * c, (0,) * c, 0))
    target = out.tensor if keepdim else b.tensor(a.node.name + "_mean_nhwc", (n, 1, 1, c), out.quant.storage,
                                                 out.quant)
    opts = options("DepthwiseConv2DOptionsT", padding=schema.Padding.VALID, strideH=1, strideW=1,
                   depthMultiplier=1, dilationHFactor=1, dilationWFactor=1)
    b.op(schema.BuiltinOperator.DEPTHWISE_CONV_2D, [x.tensor, weights, bias], [target], opts)
    if not keepdim:
        shape = b.int32_vector(a.node.name + "_mean_shape", b.shape_of(out.tensor))
        b.op(schema.BuiltinOperator.RESHAPE, [target, shape], [out.tensor],
             options("ReshapeOptionsT", newShape=list(b.shape_of(out.tensor))))


@constraint("output size 1x1, or dividing the input size (then it is an average pool with kernel = stride)")
def _adaptive_size(a, ctx):
    size = spatial(a["output_size"], None)
    h, w = a.shape("self")[2:]
    if size == [1, 1] or (h % size[0] == 0 and w % size[1] == 0):
        return None
    return f"output size {size} of input size {[h, w]}"


def _adaptive_is_pool(a) -> bool:
    return spatial(a["output_size"], None) != [1, 1]


@constraint("equal input and output quantization (when not global)")
def _adaptive_shared(a, ctx):
    return shared_quantization().check(a, ctx) if _adaptive_is_pool(a) else None


def _channels_last_input(a) -> bool:
    """ExecuTorch decomposes the pooling of a channels-last tensor into a mean and an as_strided copy back to
    channels-last strides, after quantization (the mean's result is then not int8): keep the op whole there."""
    return bool(a.node.args) and stored_channels_last(a.node.args[0])


@register(_aten._adaptive_avg_pool2d.default, _aten.adaptive_avg_pool2d.default,
          constraints=(_rank4, _adaptive_size, _adaptive_shared),
          quantize={"shared": (A.adaptive_avg_pool2d.default,)}, preserve="if_delegated",
          preserve_when=_channels_last_input, int16=True)
def convert_adaptive_avg_pool2d(ctx, a):
    """Average pooling to a fixed output size: the spatial mean when global (`mean_hw`), else AVERAGE_POOL_2D with
    kernel = stride."""
    if not _adaptive_is_pool(a):
        mean_hw(ctx, a, keepdim=True)
        return
    oh, ow = spatial(a["output_size"], None)
    h, w = a.shape("self")[2:]
    x = ctx.value(a["self"], Layout.CHANNELS_LAST)
    out = ctx.emit_output(a.node, Layout.CHANNELS_LAST, quant=x.quant)
    opts = options("Pool2DOptionsT", padding=schema.Padding.VALID, strideH=h // oh, strideW=w // ow,
                   filterHeight=h // oh, filterWidth=w // ow)
    ctx.builder.op(schema.BuiltinOperator.AVERAGE_POOL_2D, [x.tensor], [out.tensor], opts)


@constraint("a mean over listed dims (not over all dims), equal input and output quantization unless over H and W "
            "of a 4D tensor", profiles={"sdk-current"})
def _mean_any(a, ctx):
    if not a["dim"]:
        return "a mean over all dims (dim=None)"
    return None if _is_mean_hw(a) else shared_quantization().check(a, ctx)


def _is_mean_hw(a) -> bool:
    shape = a.shape("self")
    return len(shape) == 4 and sorted(d % 4 for d in (a["dim"] or [])) == [2, 3]


@register(_aten.mean.dim, constraints=(_mean_any,), quantize={"mean": (A.mean.dim,)}, int16=True)
def convert_mean(ctx, a):
    """Mean over H and W (`mean_hw`), or over any listed dims in PyTorch order (MEAN)."""
    if _is_mean_hw(a):
        mean_hw(ctx, a, keepdim=bool(a["keepdim"]))
        return
    reduce_dims(ctx, a, schema.BuiltinOperator.MEAN)


#: why a 3-D pool reaches the partitioner (each back end's no-kernel reason for them ends with it)
POOL3D_LEFT = ("passes/pool3d_to_pool2d.py writes the others as 2-D max pools or one convolution; left are averages "
               "whose divisor is not the window size everywhere (count_include_pad=False with padding, a ceil_mode "
               "window over the edge, divisor_override), adaptive pools with overlapping windows, and return_indices")


def pool3d_left(a) -> str | None:
    """What in a 3-D pool left it as one (see passes/pool3d_to_pool2d.py)."""
    dhw, out = list(a.shape("self")[-3:]), list(a.out_shape[-3:])
    if a.node.target == _aten._adaptive_avg_pool3d.default:
        return f"output size {out} does not divide the input size {dhw}: the windows overlap"
    if a.node.target == _aten.max_pool3d_with_indices.default:
        return "its indices are used (return_indices=True)"
    if a["divisor_override"] is not None:
        return f"divisor_override {a['divisor_override']}"
    if not a["count_include_pad"] and any(a["padding"]):
        return f"count_include_pad=False with padding {list(a['padding'])}: the divisor shrinks at the edges"
    return f"ceil_mode: output {out} of {dhw} has a window over the edge, with a smaller divisor"

"""aten.convolution: 2D convolution (regular and depthwise) -> TFLite CONV_2D / DEPTHWISE_CONV_2D.

Weights are per-channel symmetric int8 (OIHW in PyTorch -> OHWI, or 1HWO for depthwise), bias int32 with scale
input_scale * weight_scale. Symmetric padding becomes SAME when that is exactly equivalent, else an explicit PAD.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..tflite.builder import Quant, options
from ..tflite.layout import Layout, physical_shape
from .common import is_int8_constant, quantize_bias, round_up, same_padding_matches
from .fusion import fused_code
from .registry import constraint, register


@constraint("2D convolution (rank-4 input); 1D is rewritten to 2D before partitioning")
def _rank(a, ctx):
    r = len(a.shape("input"))
    return None if r == 4 else f"{r - 2}D convolution: Neutron converts 2D convolutions (1D after the conv1d->conv2d pass)"


@constraint("not transposed (transposed convolution has its own constraints)")
def _not_transposed(a, ctx):
    return "transposed convolution is not supported yet" if a["transposed"] else None


@constraint("constant int8 weights (dequantized per channel or per tensor)")
def _constant_weights(a, ctx):
    return None if is_int8_constant(a["weight"], ctx) else "weights are not a constant int8 tensor"


@constraint("groups 1 or groups == input channels (depthwise)")
def _groups(a, ctx):
    g, c = a["groups"], a.shape("input")[1]
    return None if g in (1, c) else f"groups {g}: Neutron supports groups 1 or groups == input channels ({c})"


@constraint("kernel_h * kernel_w * round_up(in_channels, num_macs) <= 65535")
def _kernel_size(a, ctx):
    _, i, kh, kw = a.shape("weight")
    in_c = a.shape("input")[1]
    size = kh * kw * round_up(in_c, ctx.num_macs)
    return None if size <= 65535 else f"kernel {kh}x{kw} with {in_c} input channels needs {size} > 65535 weight slots"


CONSTRAINTS = (_rank, _not_transposed, _constant_weights, _groups, _kernel_size)


@register(exir_ops.edge.aten.convolution.default, constraints=CONSTRAINTS)
def convert_conv2d(ctx, a):
    """Conv2d and depthwise Conv2d with optional fused relu/relu6/hardtanh/clamp."""
    b = ctx.builder
    x = ctx.value(a["input"], Layout.CHANNELS_LAST)
    w = ctx.quantized_constant(a["weight"])
    out_c, _, kh, kw = w.data.shape
    in_c = x.shape[1]
    depthwise = a["groups"] == in_c and a["groups"] != 1
    stride, pad, dil = list(a["stride"]), list(a["padding"]), list(a["dilation"])
    in_scale = x.quant.scale[0]

    same = all(same_padding_matches(x.shape[2 + i], (kh, kw)[i], stride[i], dil[i], pad[i]) for i in range(2))
    if any(pad) and not same:
        x = _explicit_pad(ctx, x, pad)
    padding = schema.Padding.SAME if any(pad) and same else schema.Padding.VALID

    w_quant = Quant(w.quant.scale, w.quant.zero_point, 3 if depthwise else 0)
    data = np.transpose(w.data, (1, 2, 3, 0) if depthwise else (0, 2, 3, 1)).astype(np.int8)
    wt = b.constant(a.node.name + "_w", data, w_quant)
    bias, bias_scales = quantize_bias(a["bias"], in_scale, w.quant.scale, ctx, out_c)
    bt = b.constant(a.node.name + "_b", bias, Quant(tuple(bias_scales), (0,) * out_c, 0))

    out = ctx.emit_output(a.node, Layout.CHANNELS_LAST)
    common = dict(padding=padding, strideH=stride[0], strideW=stride[1], dilationHFactor=dil[0],
                  dilationWFactor=dil[1], fusedActivationFunction=fused_code(a.node))
    if depthwise:
        opts = options("DepthwiseConv2DOptionsT", depthMultiplier=out_c // in_c, **common)
        b.op(schema.BuiltinOperator.DEPTHWISE_CONV_2D, [x.tensor, wt, bt], [out.tensor], opts)
    else:
        b.op(schema.BuiltinOperator.CONV_2D, [x.tensor, wt, bt], [out.tensor], options("Conv2DOptionsT", **common))


def _explicit_pad(ctx, x, pad):
    """PAD an NHWC tensor by the symmetric (pad_h, pad_w) with the input zero point (== real 0.0)."""
    b = ctx.builder
    n, c, h, w = x.shape
    shape = (n, c, h + 2 * pad[0], w + 2 * pad[1])
    paddings = np.array([[0, 0], [pad[0], pad[0]], [pad[1], pad[1]], [0, 0]], dtype=np.int32)
    pt = b.constant(f"t{x.tensor}_paddings", paddings)
    out = b.tensor(f"t{x.tensor}_padded", physical_shape(shape, Layout.CHANNELS_LAST), np.int8, x.quant)
    b.op(schema.BuiltinOperator.PAD, [x.tensor, pt], [out], options("PadOptionsT"))
    return type(x)(out, shape, Layout.CHANNELS_LAST, x.quant)

"""aten.convolution: 2D convolution (regular, depthwise, transposed) -> TFLite CONV_2D / DEPTHWISE_CONV_2D /
TRANSPOSE_CONV. 1D convolutions (regular and transposed) are rewritten to 2D before quantization
(passes/conv1d_to_conv2d.py); a regular rank-3 one that still reaches the partitioner is converted here directly.

Weights are per-channel symmetric int8 (OIHW in PyTorch -> OHWI, or 1HWO for depthwise), bias int32 with scale
input_scale * weight_scale. Symmetric padding becomes SAME when that is exactly equivalent, else an explicit PAD.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema
import torch
from executorch.exir.dialects._ops import ops as exir_ops

from ..tflite.builder import Quant, options
from ..tflite.layout import CONV_WEIGHT_PERM, OUT_LAST_WEIGHT_PERM, Layout, physical_shape
from .common import bias_storage, is_int8_constant, quantize_bias, same_padding_matches
from .fusion import fused_code
from .registry import constraint, register


@constraint("1D or 2D convolution (rank-3 or rank-4 input; transposed 1D ones arrive as 2D, see the conv1d pass)")
def _rank(a, ctx):
    r = len(a.shape("input"))
    if r == 4 or (r == 3 and not a["transposed"]):
        return None
    return f"{r - 2}D {'transposed ' if a['transposed'] else ''}convolution"


def transposed_kernel(a) -> list[int]:
    """The kernel extent of a transposed convolution as written to TFLite: dilation d spreads k taps over
    d * (k - 1) + 1 positions (the weight gets zeros in between; TRANSPOSE_CONV has no dilation)."""
    return [d * (k - 1) + 1 for k, d in zip(a.shape("weight")[2:], list(a["dilation"]))]


@constraint("transposed: padding < kernel (dilation and groups are converted: zeros in the kernel between the "
            "dilated taps, a block-diagonal weight for the groups)")
def _transposed(a, ctx):
    if not a["transposed"]:
        return None
    k, p = transposed_kernel(a), list(a["padding"])
    if any(x >= kk for x, kk in zip(p, k)):
        return f"transposed convolution padding {p} with kernel {k}"
    return None


@constraint("constant int8 weights (dequantized per channel or per tensor)")
def _constant_weights(a, ctx):
    return None if is_int8_constant(a["weight"], ctx) else "weights are not a constant int8 tensor"


@constraint("groups 1, groups == input channels (depthwise), or 2-D grouped (run as one convolution per group + "
            "concatenation)")
def _groups(a, ctx):
    g, c = a["groups"], a.shape("input")[1]
    if a["transposed"] or g in (1, c) or len(a.out_shape) == 4:
        return None
    return f"1-D convolution with groups {g}"


CONSTRAINTS = (_rank, _constant_weights, _groups, _transposed)


A = torch.ops.aten


@register(exir_ops.edge.aten.convolution.default, constraints=CONSTRAINTS, fuses_activation=True, quantize={
    "weighted": (A.conv1d.default, A.conv2d.default, A.conv1d.padding, A.conv2d.padding),
    "weighted_transpose": (A.conv_transpose1d.default, A.conv_transpose2d.input)}, int16=True)
def convert_conv2d(ctx, a):
    """Conv1d, Conv2d, depthwise and transposed Conv2d with optional fused relu/relu6/hardtanh/clamp."""
    if a["transposed"]:
        _transpose_conv(ctx, a)
        return
    w = ctx.quantized_constant(a["weight"])
    stride, pad, dil = list(a["stride"]), list(a["padding"]), list(a["dilation"])
    if len(a.shape("input")) == 4:
        x = ctx.value(a["input"], Layout.CHANNELS_LAST)
        out = ctx.emit_output(a.node, Layout.CHANNELS_LAST)
        if a["groups"] in (1, x.shape[1]):
            _conv2d(ctx, a, x, w.data, w.quant, stride, pad, dil, out.tensor)
        else:
            _grouped(ctx, a, x, w, stride, pad, dil, out.tensor)
        return
    # 1D: (N, C, L) is the image (N, C, 1, L); NHWC (N, 1, L, C) is (N, L, C) reshaped
    b = ctx.builder
    x3 = ctx.value(a["input"], Layout.NATURAL)
    n, c, length = x3.shape
    nlc = b.tensor(a.node.name + "_nlc", (n, length, c), np.int8, x3.quant)
    b.op(schema.BuiltinOperator.TRANSPOSE, [x3.tensor, b.int32_vector(a.node.name + "_perm_in", (0, 2, 1))], [nlc],
         options("TransposeOptionsT"))
    x4 = _reshaped(ctx, a.node.name + "_in4", nlc, (n, 1, length, c), x3.quant)
    x = type(x3)(x4, (n, c, 1, length), Layout.CHANNELS_LAST, x3.quant)
    _, out_c, out_len = a.out_shape
    quant = ctx.output_quant(a.node)
    y4 = b.tensor(a.node.name + "_out4", (n, 1, out_len, out_c), np.int8, quant)
    _conv2d(ctx, a, x, w.data[:, :, None, :], w.quant, [1] + stride, [0] + pad, [1] + dil, y4)
    nlo = _reshaped(ctx, a.node.name + "_nlo", y4, (n, out_len, out_c), quant)
    out = ctx.emit_output(a.node, Layout.NATURAL, quant=quant)
    b.op(schema.BuiltinOperator.TRANSPOSE, [nlo, b.int32_vector(a.node.name + "_perm_out", (0, 2, 1))],
         [out.tensor], options("TransposeOptionsT"))


def _reshaped(ctx, name, tensor, shape, quant):
    b = ctx.builder
    out = b.tensor(name, shape, np.int8, quant)
    b.op(schema.BuiltinOperator.RESHAPE, [tensor, b.int32_vector(name + "_shape", shape)], [out],
         options("ReshapeOptionsT", newShape=list(shape)))
    return out


def _padded(ctx, x, kernel, stride, pad, dil):
    """(input, TFLite padding): SAME when it equals PyTorch's symmetric padding, else an explicit PAD + VALID."""
    same = all(same_padding_matches(x.shape[2 + i], kernel[i], stride[i], dil[i], pad[i]) for i in range(2))
    if any(pad) and not same:
        return _explicit_pad(ctx, x, pad), schema.Padding.VALID
    return x, (schema.Padding.SAME if any(pad) else schema.Padding.VALID)


def _conv_options(a, padding, stride, dil) -> dict:
    return dict(padding=padding, strideH=stride[0], strideW=stride[1], dilationHFactor=dil[0],
                dilationWFactor=dil[1], fusedActivationFunction=fused_code(a.node))


def _conv2d(ctx, a, x, w_data, w_quant_pt, stride, pad, dil, out_tensor):
    """CONV_2D / DEPTHWISE_CONV_2D of channels-last `x` with OIHW int8 weights into `out_tensor`."""
    b = ctx.builder
    out_c, _, kh, kw = w_data.shape
    in_c = x.shape[1]
    depthwise = a["groups"] == in_c and a["groups"] != 1
    in_scale = x.quant.scale[0]
    x, padding = _padded(ctx, x, (kh, kw), stride, pad, dil)

    w_quant = Quant(w_quant_pt.scale, w_quant_pt.zero_point, 3 if depthwise else 0)
    data = np.transpose(w_data, OUT_LAST_WEIGHT_PERM if depthwise else CONV_WEIGHT_PERM).astype(np.int8)
    wt = b.constant(a.node.name + "_w", data, w_quant)
    bias, bias_scales = quantize_bias(a["bias"], in_scale, w_quant_pt.scale, ctx, out_c, bias_storage(x.quant))
    bt = b.constant(a.node.name + "_b", bias, Quant(tuple(bias_scales), (0,) * out_c, 0))

    common = _conv_options(a, padding, stride, dil)
    if depthwise:
        opts = options("DepthwiseConv2DOptionsT", depthMultiplier=out_c // in_c, **common)
        b.op(schema.BuiltinOperator.DEPTHWISE_CONV_2D, [x.tensor, wt, bt], [out_tensor], opts)
    else:
        b.op(schema.BuiltinOperator.CONV_2D, [x.tensor, wt, bt], [out_tensor], options("Conv2DOptionsT", **common))


def _grouped(ctx, a, x, w, stride, pad, dil, out_tensor):
    """A grouped convolution (groups neither 1 nor the input channels) as SPLIT of the channels-last input, one
    CONV_2D per group (its slice of the per-channel weights and bias, the fused activation) and CONCATENATION.
    Every group's result carries the conv's own output quantization, so the concatenation is exact and the
    result equals PyTorch's grouped convolution. Kept as one node in the ExecuTorch graph (the split lives only
    in the TFLite), so lowering time does not grow with the number of groups."""
    b = ctx.builder
    name, groups = a.node.name, a["groups"]
    out_c, ci, kh, kw = w.data.shape
    co = out_c // groups
    x, padding = _padded(ctx, x, (kh, kw), stride, pad, dil)
    n, _, h, wd = x.shape
    bias, bias_scales = quantize_bias(a["bias"], x.quant.scale[0], w.quant.scale, ctx, out_c,
                                      bias_storage(x.quant))
    per_channel = len(w.quant.scale) > 1
    pieces = [b.tensor(f"{name}_in{i}", (n, h, wd, ci), np.int8, x.quant) for i in range(groups)]
    b.op(schema.BuiltinOperator.SPLIT, [b.int32_vector(name + "_axis", [3]), x.tensor], pieces,
         options("SplitOptionsT", numSplits=groups))
    quant = ctx.output_quant(a.node)
    _, _, oh, ow = a.out_shape
    outs = []
    opts = _conv_options(a, padding, stride, dil)
    for i, piece in enumerate(pieces):
        rows = slice(i * co, (i + 1) * co)
        scales = w.quant.scale[rows] if per_channel else w.quant.scale
        zps = w.quant.zero_point[rows] if per_channel else w.quant.zero_point
        data = np.transpose(w.data[rows], CONV_WEIGHT_PERM).astype(np.int8)
        wt = b.constant(f"{name}_w{i}", data, Quant(tuple(scales), tuple(zps), 0))
        bt = b.constant(f"{name}_b{i}", bias[rows], Quant(tuple(bias_scales[rows]), (0,) * co, 0))
        outs.append(b.tensor(f"{name}_out{i}", (n, oh, ow, co), np.int8, quant))
        b.op(schema.BuiltinOperator.CONV_2D, [piece, wt, bt], [outs[-1]], options("Conv2DOptionsT", **opts))
    b.op(schema.BuiltinOperator.CONCATENATION, outs, [out_tensor], options("ConcatenationOptionsT", axis=3))


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


def _transpose_weight(a, w):
    """A transposed convolution's int8 weight [in, out / groups, kh, kw] and its per-output-channel scales as one
    dense [in, out, kh', kw'] TRANSPOSE_CONV weight: each group's block on the diagonal (zeros elsewhere, so an
    output channel still sums over its own group's inputs only) and each tap at its dilated position (zeros
    between). The zeros add nothing: the result is PyTorch's grouped, dilated transposed convolution."""
    data = w.data
    groups, (cin, co) = a["groups"], data.shape[:2]
    dh, dw = list(a["dilation"])
    eh, ew = transposed_kernel(a)
    dense = np.zeros((cin, co * groups, eh, ew), dtype=data.dtype)
    ci = cin // groups
    for g in range(groups):
        dense[g * ci:(g + 1) * ci, g * co:(g + 1) * co, ::dh, ::dw] = data[g * ci:(g + 1) * ci]
    scales, zps = w.quant.scale, w.quant.zero_point
    if len(scales) > 1 and groups > 1:  # one scale per channel of a group: each group's channels repeat them
        scales, zps = tuple(scales) * groups, tuple(zps) * groups
    return dense, Quant(tuple(scales), tuple(zps), 0)


def _transpose_conv(ctx, a):
    """TRANSPOSE_CONV with VALID padding computes the full (in - 1) * s + k output; PyTorch's padding crops it
    (a STRIDED_SLICE). An output_padding beyond the padding asks for rows past the full output: TRANSPOSE_CONV is
    given that larger output shape, and with VALID padding it places the taps from the top-left as before, so the
    extra rows receive no taps and hold the bias, as in PyTorch."""
    b = ctx.builder
    x = ctx.value(a["input"], Layout.CHANNELS_LAST)
    w = ctx.quantized_constant(a["weight"])  # [in, out / groups, kh, kw], per channel along axis 1
    data, w_quant = _transpose_weight(a, w)
    _, out_c, kh, kw = data.shape
    n, _, h, wd = x.shape
    s, p = list(a["stride"]), list(a["padding"])
    final = tuple(a.out_shape)
    extra = [max(0, p[i] + final[2 + i] - ((h, wd)[i] - 1) * s[i] - (kh, kw)[i]) for i in range(2)]
    full = (n, out_c, (h - 1) * s[0] + kh + extra[0], (wd - 1) * s[1] + kw + extra[1])
    wt = b.constant(a.node.name + "_w", np.transpose(data, OUT_LAST_WEIGHT_PERM).astype(np.int8), w_quant)
    bias, bias_scales = quantize_bias(a["bias"], x.quant.scale[0], w_quant.scale, ctx, out_c,
                                      bias_storage(x.quant))
    bt = b.constant(a.node.name + "_b", bias, Quant(tuple(bias_scales), (0,) * out_c, 0))
    shape_t = b.int32_vector(a.node.name + "_out_shape", physical_shape(full, Layout.CHANNELS_LAST))
    act = fused_code(a.node)
    opts = options("TransposeConvOptionsT", padding=schema.Padding.VALID, strideH=s[0], strideW=s[1],
                   fusedActivationFunction=act)
    if final == full:
        out = ctx.emit_output(a.node, Layout.CHANNELS_LAST)
        b.op(schema.BuiltinOperator.TRANSPOSE_CONV, [shape_t, wt, x.tensor, bt], [out.tensor], opts)
        return
    quant = ctx.output_quant(a.node)
    tmp = b.tensor(a.node.name + "_full", physical_shape(full, Layout.CHANNELS_LAST), np.int8, quant)
    b.op(schema.BuiltinOperator.TRANSPOSE_CONV, [shape_t, wt, x.tensor, bt], [tmp], opts)
    out = ctx.emit_output(a.node, Layout.CHANNELS_LAST, quant=quant)
    begin = [0, p[0], p[1], 0]
    end = [full[0], p[0] + final[2], p[1] + final[3], out_c]
    b.op(schema.BuiltinOperator.STRIDED_SLICE, [tmp, b.int32_vector(a.node.name + "_begin", begin),
                                                b.int32_vector(a.node.name + "_end", end),
                                                b.int32_vector(a.node.name + "_strides", [1, 1, 1, 1])],
         [out.tensor], options("StridedSliceOptionsT"))

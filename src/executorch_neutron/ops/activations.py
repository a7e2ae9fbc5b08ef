"""Standalone activations: relu, hardtanh / relu6, clamp, sigmoid, tanh, leaky_relu, hardswish, abs, neg, prelu.

They map to TFLite RELU*, LOGISTIC, TANH, LEAKY_RELU, HARD_SWISH, ABS, MUL by -1 (neg) and PRELU.

When an activation directly follows a conv/linear/add/mul it is fused into that op instead (see fusion.py) and
never reaches these converters. LOGISTIC and TANH need fixed output quantization (1/256, -128 and 1/128, 0).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..core.qdq import FIXED_QPARAMS_INT16, SIGMOID_SOFTMAX_QPARAMS, TANH_QPARAMS
from ..tflite.builder import Quant, options
from ..tflite.layout import Layout
from .fusion import SUPPORTED_BOUNDS_TEXT, activation_bounds, activation_codes
from .common import is_dq, is_dq_per_tensor, is_q, shared_quantization
from .registry import Constraint, constraint, register

_aten = exir_ops.edge.aten
A = torch.ops.aten


def unary(ctx, a, builtin: int, arg: str = "self", opts=None) -> None:
    """Elementwise int8 op that keeps its input's layout."""
    x = ctx.value(a[arg])
    out = ctx.emit_output(a.node, x.layout)
    ctx.builder.op(builtin, [x.tensor], [out.tensor], opts)


@constraint(f"bounds {SUPPORTED_BOUNDS_TEXT}, or any bounds with at least one finite bound and equal input and "
            "output quantization (MAXIMUM / MINIMUM)", profiles={"sdk-current"})
def _any_bounds(a, ctx):
    if activation_codes(a.node) is not None:
        return None
    lo, hi = activation_bounds(a.node)
    if not (math.isfinite(lo) or math.isfinite(hi)):
        return f"bounds {(lo, hi)}"
    return shared_quantization().check(a, ctx)


@register(_aten.relu.default, quantize={"own_output": (A.relu.default, A.relu_.default)}, int16=True)
def convert_relu(ctx, a):
    """max(x, 0)."""
    unary(ctx, a, schema.BuiltinOperator.RELU)


@register(_aten.hardtanh.default, _aten.clamp.default, constraints=(_any_bounds,), quantize={
    "clamp": (A.relu6.default, A.hardtanh.default, A.hardtanh_.default, A.clamp.default, A.clamp_.default)},
    int16=True)
def convert_clamp(ctx, a):
    """Clamp: a RELU* op for the bounded ranges it implements (relu6 is hardtanh(0, 6)), else MAXIMUM and/or
    MINIMUM with the bounds quantized to the input's (= the output's) parameters."""
    codes = activation_codes(a.node)
    if codes is not None:
        unary(ctx, a, codes[1])
        return
    b = ctx.builder
    x = ctx.value(a["self"])
    out = ctx.emit_output(a.node, x.layout, quant=x.quant)
    scale, zp = x.quant.scale[0], x.quant.zero_point[0]
    steps = [(op, bound) for op, bound in zip((schema.BuiltinOperator.MAXIMUM, schema.BuiltinOperator.MINIMUM),
                                              activation_bounds(a.node)) if math.isfinite(bound)]
    src = x.tensor
    for i, (op, bound) in enumerate(steps):
        info = np.iinfo(x.quant.storage)
        q = np.full([1] * len(x.shape), np.clip(np.round(bound / scale) + zp, info.min, info.max),
                    dtype=x.quant.storage)
        c = b.constant(f"{a.node.name}_bound{i}", q, x.quant)
        dst = out.tensor if i == len(steps) - 1 else b.tensor(f"{a.node.name}_lower", b.shape_of(x.tensor), np.int8,
                                                              x.quant)
        b.op(op, [src, c], [dst])
        src = dst


def fixed_output(scale: float, zero_point: int) -> Constraint:
    """The int8 output quantization the op's LiteRT kernel needs (an int16 output: 1/32768, 0 for each)."""
    def check(a, ctx):
        qs = [u for u in a.node.users if is_q(u)]
        if not qs:
            return None  # reported by the generic int8 check
        s, z = float(qs[0].args[1]), int(qs[0].args[2])
        want_s, want_z = FIXED_QPARAMS_INT16 if qs[0].args[5] == torch.int16 else (scale, zero_point)
        if abs(s - want_s) > 1e-6 * want_s or z != want_z:
            return f"output quantized with scale {s:.6g}, zero point {z}"
        return None

    return Constraint(f"output quantization scale {scale:.6g}, zero point {zero_point} (int16: scale "
                      f"{FIXED_QPARAMS_INT16[0]:.6g}, zero point 0; LiteRT's kernel needs it; NeutronQuantizer sets it)",
                      check)


@register(_aten.sigmoid.default, constraints=(fixed_output(*SIGMOID_SOFTMAX_QPARAMS),),
          quantize={"fixed_sigmoid_softmax": (A.sigmoid.default, A.sigmoid_.default)}, int16=True)
def convert_sigmoid(ctx, a):
    """Logistic function."""
    unary(ctx, a, schema.BuiltinOperator.LOGISTIC)


@register(_aten.tanh.default, constraints=(fixed_output(*TANH_QPARAMS),),
          quantize={"fixed_tanh": (A.tanh.default, A.tanh_.default)}, int16=True)
def convert_tanh(ctx, a):
    """Hyperbolic tangent."""
    unary(ctx, a, schema.BuiltinOperator.TANH)



@register(_aten.leaky_relu.default, quantize={"own_output": (A.leaky_relu.default, A.leaky_relu_.default)},
          int16=True)
def convert_leaky_relu(ctx, a):
    """x for x >= 0, negative_slope * x otherwise."""
    unary(ctx, a, schema.BuiltinOperator.LEAKY_RELU,
          opts=options("LeakyReluOptionsT", alpha=float(a["negative_slope"])))


@register(_aten.hardswish.default, preserve="if_delegated",
          quantize={"own_output": (A.hardswish.default, A.hardswish_.default)})
def convert_hardswish(ctx, a):
    """x * relu6(x + 3) / 6 (kept from decomposition by the partitioner when the NPU takes it)."""
    unary(ctx, a, schema.BuiltinOperator.HARD_SWISH)


@register(_aten.abs.default, quantize={"own_output": (A.abs.default,)}, int16=True)
def convert_abs(ctx, a):
    """|x| with requantization."""
    unary(ctx, a, schema.BuiltinOperator.ABS)


@register(_aten.neg.default, quantize={"own_output": (A.neg.default,)}, int16=True)
def convert_neg(ctx, a):
    """-x, as a MUL by the exactly representable constant -1 (scale 1, value -1) of the input's type (Vela refuses a
    MUL of int16 by int8)."""
    x = ctx.value(a["self"])
    dtype = x.quant.dtype
    minus_one = ctx.builder.constant(a.node.name + "_minus_one", np.full([1] * len(x.shape), -1, dtype=dtype),
                                     Quant.per_tensor(1.0, 0, dtype))
    out = ctx.emit_output(a.node, x.layout)
    ctx.builder.op(schema.BuiltinOperator.MUL, [x.tensor, minus_one], [out.tensor], options("MulOptionsT"))


@constraint("rank 2 or more, or rank 1 with one slope", profiles={"sdk-current"})
def _prelu_rank(a, ctx):
    r = len(a.shape("self"))
    if r >= 2 or math.prod(a.shape("weight")) == 1:
        return None
    return f"rank {r} with {math.prod(a.shape('weight'))} slopes"


@constraint("constant int8 slopes (one, or one per channel)")
def _prelu_weight(a, ctx):
    w = a["weight"]
    if not (is_dq(w) and ctx.is_constant(w.args[0]) and is_dq_per_tensor(w)):
        return "slopes not a constant int8 tensor quantized per tensor"
    n, shape = a.shape("weight"), a.shape("self")
    channels = shape[1] if len(shape) > 1 else 1
    return None if len(n) == 1 and n[0] in (1, channels) else f"slope shape {list(n)}"


@register(_aten.prelu.default, constraints=(_prelu_rank, _prelu_weight), preserve="if_delegated",
          quantize={"own_output2": (A.prelu.default,)},
          no_int16=("the converter writes PRELU's slopes as int8 data, and NeutronQuantizer quantizes them like "
                    "an activation (int16 under A16W8)"))
def convert_prelu(ctx, a):
    """x for x >= 0, slope[c] * x otherwise, c along dim 1 (kept from decomposition by the partitioner when the NPU
    takes it). The slopes are shaped to broadcast along the channels of the physical layout."""
    b = ctx.builder
    rank = len(a.shape("self"))
    layout = Layout.preferred(rank)
    x = ctx.value(a["self"], layout)
    w = ctx.quantized_constant(a["weight"])
    shape = (1, 1, -1) if layout is Layout.CHANNELS_LAST else (-1,) + (1,) * (rank - 2)
    alpha = b.constant(a.node.name + "_alpha", w.data.reshape(shape).astype(np.int8), w.quant)
    out = ctx.emit_output(a.node, layout)
    b.op(schema.BuiltinOperator.PRELU, [x.tensor, alpha], [out.tensor])

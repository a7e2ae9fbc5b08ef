"""Elementwise math functions: rsqrt, exp, log, log2, log10 -> TFLite RSQRT, EXP, LOG (int8 in, int8 out, each
with its own output quantization: the kernels requantize through a lookup table). NXP's current SDK delegates them;
the documented table has none of them (so: `sdk-current` profile only)."""

from __future__ import annotations

import math

import numpy as np
import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..tflite.builder import Quant, options
from .activations import unary
from .registry import register

_aten = exir_ops.edge.aten
A = torch.ops.aten


#: measured on 1/sqrt(x * x + 0.5) and log(x * x + 0.5), x ~ N(0, 9): LiteRT's int16 kernels are far from PyTorch's
_LUT_INT16 = ("LiteRT's int16 {op} is {steps} output steps from PyTorch's quantized {fn} (measured; the int8 "
              "kernel is within 1)")


@register(_aten.rsqrt.default, profiles={"sdk-current"}, quantize={"own_output": (A.rsqrt.default,)},
          no_int16=_LUT_INT16.format(op="RSQRT", steps="up to 1585", fn="rsqrt"))
def convert_rsqrt(ctx, a):
    """1 / sqrt(x) (layer norm's normalizer); inputs at or below 0 give the int8 maximum."""
    unary(ctx, a, schema.BuiltinOperator.RSQRT)


@register(_aten.exp.default, profiles={"sdk-current"}, quantize={"own_output": (A.exp.default,)}, int16=True)
def convert_exp(ctx, a):
    """e ** x."""
    unary(ctx, a, schema.BuiltinOperator.EXP)


@register(_aten.log.default, profiles={"sdk-current"}, quantize={"own_output": (A.log.default,)},
          no_int16=_LUT_INT16.format(op="LOG", steps="up to 296", fn="log"))
def convert_log(ctx, a):
    """Natural logarithm; inputs at or below 0 give the int8 minimum."""
    unary(ctx, a, schema.BuiltinOperator.LOG)


def _log_base(ctx, a, base: float) -> None:
    """log_base(x) = ln(x) / ln(base): LOG with its output at scale s * ln(base) (zero point z) holds the integers
    round(log_base(x) / s) + z already; a MUL by 1 / ln(base) (the constant 1 at that scale, exact) relabels them
    at the output's scale s (requantization by exactly 1), so no rounding is added to LOG's own."""
    b = ctx.builder
    x = ctx.value(a["self"])
    quant = ctx.output_quant(a.node)
    ln = math.log(base)
    ln_quant = Quant.per_tensor(quant.scale[0] * ln, quant.zero_point[0])
    ln_x = b.tensor(a.node.name + "_ln", b.shape_of(x.tensor), np.int8, ln_quant)
    b.op(schema.BuiltinOperator.LOG, [x.tensor], [ln_x])
    inv = b.constant(a.node.name + "_inv_ln", np.ones([1] * len(x.shape), dtype=np.int8), Quant.per_tensor(1 / ln, 0))
    out = ctx.emit_output(a.node, x.layout, quant=quant)
    b.op(schema.BuiltinOperator.MUL, [ln_x, inv], [out.tensor], options("MulOptionsT"))


@register(_aten.log2.default, profiles={"sdk-current"}, quantize={"own_output": (A.log2.default,)},
          no_int16=_LUT_INT16.format(op="LOG", steps="up to 296", fn="log"))
def convert_log2(ctx, a):
    """Base-2 logarithm: LOG and an exact rescale (MUL by the constant 1 / ln 2)."""
    _log_base(ctx, a, 2.0)


@register(_aten.log10.default, profiles={"sdk-current"}, quantize={"own_output": (A.log10.default,)},
          no_int16=_LUT_INT16.format(op="LOG", steps="up to 296", fn="log"))
def convert_log10(ctx, a):
    """Base-10 logarithm: LOG and an exact rescale (MUL by the constant 1 / ln 10)."""
    _log_base(ctx, a, 10.0)

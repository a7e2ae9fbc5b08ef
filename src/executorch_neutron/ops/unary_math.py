"""Elementwise math functions: rsqrt, exp, log -> TFLite RSQRT, EXP, LOG (int8 in, int8 out, each with its own
output quantization: the kernels requantize through a lookup table). NXP's current SDK delegates them; the
documented table has none of them (so: `sdk-current` profile only)."""

from __future__ import annotations

import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from .activations import unary
from .registry import register

_aten = exir_ops.edge.aten
A = torch.ops.aten


@register(_aten.rsqrt.default, profiles={"sdk-current"}, quantize={"own_output": (A.rsqrt.default,)})
def convert_rsqrt(ctx, a):
    """1 / sqrt(x) (layer norm's normalizer); inputs at or below 0 give the int8 maximum."""
    unary(ctx, a, schema.BuiltinOperator.RSQRT)


@register(_aten.exp.default, profiles={"sdk-current"}, quantize={"own_output": (A.exp.default,)})
def convert_exp(ctx, a):
    """e ** x."""
    unary(ctx, a, schema.BuiltinOperator.EXP)


@register(_aten.log.default, profiles={"sdk-current"}, quantize={"own_output": (A.log.default,)})
def convert_log(ctx, a):
    """Natural logarithm; inputs at or below 0 give the int8 minimum."""
    unary(ctx, a, schema.BuiltinOperator.LOG)

"""Reductions over listed dims: sum.dim_IntList -> TFLite MEAN then MUL by the count, amax / amin -> REDUCE_MAX /
REDUCE_MIN, and the general (not spatial) case of mean.dim -> MEAN.

The value is reduced in PyTorch's dimension order (a rank-4 channels-last value is transposed back first), so the
axes are PyTorch's and a keepdim=False result needs no layout bookkeeping. A reduction over the last dim of a
tensor of rank >= 3 whose last three dims are all larger than 1 or whose first dim is (layer norm's rows in
MobileViT: [4, 16, 64]) is written as RESHAPE to [rows, 1, last] + the reduction over the last axis + RESHAPE to
the result (`rows_view`), and a reduction over every dim likewise on [1, 1, every element]: the same numbers, and
an IFM of batch 1 with a unit axis, which Vela needs for a MEAN. The spatial mean of a rank-4 tensor is
in pooling.py (MEAN over the NHWC spatial axes, no transpose).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..tflite.builder import Quant, Value, options
from ..tflite.layout import Layout
from .common import shared_quantization
from .registry import register

_aten = exir_ops.edge.aten
A = torch.ops.aten


def _axes(a) -> list[int]:
    rank = len(a.shape("self"))
    dims = a["dim"]
    dims = [dims] if isinstance(dims, int) else (dims or range(rank))
    return sorted({d % rank for d in dims})


def reduce_dims(ctx, a, builtin: int, quant=None, out=None) -> Value:
    """`builtin` (MEAN, REDUCE_MAX, REDUCE_MIN) over the dims `a["dim"]` (all when None or empty) into `out` (by
    default the node's output, quantized as the graph says or with `quant`)."""
    b = ctx.builder
    x = ctx.value(a["self"], Layout.NATURAL)
    out = out or ctx.emit_output(a.node, Layout.NATURAL, quant=quant)
    flat = rows_view(a)
    if flat is None:
        at = b.constant(a.node.name + "_axes", np.asarray(_axes(a), dtype=np.int32))
        b.op(builtin, [x.tensor, at], [out.tensor], options("ReducerOptionsT", keepDims=bool(a["keepdim"])))
        return out
    name = a.node.name
    rows = b.tensor(name + "_rows", flat, np.int8, x.quant)
    b.op(schema.BuiltinOperator.RESHAPE, [x.tensor, b.int32_vector(name + "_rows_shape", flat)], [rows],
         options("ReshapeOptionsT", newShape=list(flat)))
    reduced = b.tensor(name + "_reduced", (flat[0], 1, 1), np.int8, out.quant)
    b.op(builtin, [rows, b.int32_vector(name + "_axes", [2])], [reduced], options("ReducerOptionsT", keepDims=True))
    shape = b.shape_of(out.tensor)
    b.op(schema.BuiltinOperator.RESHAPE, [reduced, b.int32_vector(name + "_out_shape", shape)], [out.tensor],
         options("ReshapeOptionsT", newShape=list(shape)))
    return out


def rows_view(a) -> tuple[int, int, int] | None:
    """[rows, 1, last]: the view a reduction of node args `a` is written on: [1, 1, every element] for a reduction
    over every dim of a rank >= 2 input; for one over the last dim alone, when the input (rank >= 3) has no unit
    axis among its last three dims or a batch above 1; else None (written as is)."""
    shape = a.shape("self")
    rank = len(shape)
    if rank >= 2 and _axes(a) == list(range(rank)):
        return (1, 1, math.prod(shape))
    if rank < 3 or _axes(a) != [rank - 1] or (1 in shape[-3:] and shape[0] == 1):
        return None
    return (math.prod(shape) // shape[-1], 1, shape[-1])


@register(_aten.sum.dim_IntList, profiles={"sdk-current"}, quantize={"own_output": (A.sum.dim_IntList,)},
          int16=True)
def convert_sum(ctx, a):
    """Sum over the listed dims (all when none are listed), own output quantization: a MEAN whose output scale is
    the sum's divided by the reduced count n (the same int8 codes), then a MUL by n (exact: requantization by
    1.0). LiteRT's reference SUM kernel gives wrong int8 results when it must requantize."""
    b = ctx.builder
    shape = a.shape("self")
    n = math.prod(shape[d] for d in _axes(a))
    out = ctx.emit_output(a.node, Layout.NATURAL)
    dtype = out.quant.dtype  # int8, or int16 under A16W8 (LiteRT's MUL takes operands of one type)
    mean_quant = Quant.per_tensor(out.quant.scale[0] / n, out.quant.zero_point[0], dtype)
    mean = Value(b.tensor(a.node.name + "_mean", out.shape, np.dtype(dtype), mean_quant), out.shape,
                 Layout.NATURAL, mean_quant)
    reduce_dims(ctx, a, schema.BuiltinOperator.MEAN, out=mean)
    count = b.constant(a.node.name + "_count", np.ones([1] * len(out.shape), dtype=dtype),
                       Quant.per_tensor(n, 0, dtype))
    b.op(schema.BuiltinOperator.MUL, [mean.tensor, count], [out.tensor], options("MulOptionsT"))


@register(_aten.amax.default, constraints=(shared_quantization(),), profiles={"sdk-current"},
          quantize={"shared": (A.amax.default,)}, int16=True)
def convert_amax(ctx, a):
    """Maximum over the listed dims (all when none are listed)."""
    reduce_dims(ctx, a, schema.BuiltinOperator.REDUCE_MAX, quant=ctx.value(a["self"]).quant)


@register(_aten.amin.default, constraints=(shared_quantization(),), profiles={"sdk-current"},
          quantize={"shared": (A.amin.default,)}, int16=True)
def convert_amin(ctx, a):
    """Minimum over the listed dims (all when none are listed)."""
    reduce_dims(ctx, a, schema.BuiltinOperator.REDUCE_MIN, quant=ctx.value(a["self"]).quant)

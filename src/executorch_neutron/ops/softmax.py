"""_softmax -> TFLite SOFTMAX over the physical last axis (channels for rank-4 channels-last values; the last dim of
a rank-4 value is made the physical last axis by keeping it in PyTorch's order).

Output quantization is fixed by LiteRT: scale 1/256, zero point -128.

A softmax larger than one SOFTMAX op the converter writes (more than `ROWS` rows or `SOFTMAX_ELEMENTS` elements, the
largest an NPU kernel takes; MobileViT's attention at 256 px has 4096 rows of 256) is computed in row chunks: RESHAPE
to [rows, channels], a STRIDED_SLICE and a SOFTMAX per chunk of as many rows as one SOFTMAX takes, CONCATENATION and
RESHAPE back. Rows are independent and
every chunk has the fixed output quantization, so the result equals one softmax. It stays one node in the graph.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..core.qdq import SIGMOID_SOFTMAX_QPARAMS
from ..tflite.builder import options
from ..tflite.layout import Layout, physical_axis
from .activations import fixed_output
from .limits import ROWS, SOFTMAX_ELEMENTS
from .registry import constraint, register

_aten = exir_ops.edge.aten
A = torch.ops.aten


def _channels_and_flat(a):
    shape = a.shape("self")
    flat = math.prod(shape)
    return shape[a["dim"] % len(shape)], flat


def _layout(a) -> Layout:
    """The layout whose physical last axis is the softmax dim: channels-last for dim 1 of a rank-4 tensor."""
    rank = len(a.shape("self"))
    return Layout.CHANNELS_LAST if rank == 4 and a["dim"] % rank == 1 else Layout.NATURAL


@constraint("softmax over the last dim (any rank), or dim 1 (the channels) of a rank-4 tensor",
            profiles={"sdk-current"})
def _dim_sdk(a, ctx):
    rank = len(a.shape("self"))
    if physical_axis(a["dim"], rank, _layout(a)) != rank - 1:
        return f"softmax over dim {a['dim']} of a rank-{rank} tensor"
    return None


def _chunk_rows(channels: int, rows: int) -> int:
    """Rows per chunk: as many as one SOFTMAX takes (<= ROWS rows and <= SOFTMAX_ELEMENTS elements)."""
    return max(1, min(rows, ROWS, SOFTMAX_ELEMENTS // channels))


@register(_aten._softmax.default, constraints=(_dim_sdk, fixed_output(*SIGMOID_SOFTMAX_QPARAMS)),
          quantize={"fixed_sigmoid_softmax": (A.softmax.int, A._softmax.default)}, int16=True)
def convert_softmax(ctx, a):
    """Softmax over the channels or the last dim (SOFTMAX works on the physical last axis)."""
    layout = _layout(a)
    x = ctx.value(a["self"], layout)
    out = ctx.emit_output(a.node, layout)
    c, flat = _channels_and_flat(a)
    if _chunk_rows(c, flat // c) == flat // c:
        ctx.builder.op(schema.BuiltinOperator.SOFTMAX, [x.tensor], [out.tensor], options("SoftmaxOptionsT", beta=1.0))
    else:
        _chunked(ctx, a.node.name, x, out, c, flat // c)


def _chunked(ctx, name, x, out, channels, rows):
    """SOFTMAX over row chunks (STRIDED_SLICE of the [rows, channels] view of `x`), concatenated into `out`."""
    b = ctx.builder
    quant_out = out.quant
    step = _chunk_rows(channels, rows)
    flat_in = b.tensor(f"{name}_rows", (rows, channels), np.int8, x.quant)
    b.op(schema.BuiltinOperator.RESHAPE, [x.tensor, b.int32_vector(f"{name}_rows_shape", [rows, channels])],
         [flat_in], options("ReshapeOptionsT", newShape=[rows, channels]))
    outs = []
    for i, start in enumerate(range(0, rows, step)):
        shape = (min(step, rows - start), channels)
        piece = b.tensor(f"{name}_in{i}", shape, np.int8, x.quant)
        b.op(schema.BuiltinOperator.STRIDED_SLICE, [flat_in, b.int32_vector(f"{name}_begin{i}", [start, 0]),
             b.int32_vector(f"{name}_end{i}", [start + shape[0], channels]),
             b.int32_vector(f"{name}_strides{i}", [1, 1])], [piece], options("StridedSliceOptionsT"))
        outs.append(b.tensor(f"{name}_out{i}", shape, np.int8, quant_out))
        b.op(schema.BuiltinOperator.SOFTMAX, [piece], [outs[-1]], options("SoftmaxOptionsT", beta=1.0))
    joined = b.tensor(f"{name}_joined", (rows, channels), np.int8, quant_out)
    b.op(schema.BuiltinOperator.CONCATENATION, outs, [joined], options("ConcatenationOptionsT", axis=0))
    shape = b.shape_of(out.tensor)
    b.op(schema.BuiltinOperator.RESHAPE, [joined, b.int32_vector(f"{name}_out_shape", shape)], [out.tensor],
         options("ReshapeOptionsT", newShape=list(shape)))

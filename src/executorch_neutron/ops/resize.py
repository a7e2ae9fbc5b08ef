"""Upsampling: upsample_bilinear2d / upsample_nearest2d -> TFLite RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR.

LiteRT's int8 resize kernels keep the input's quantization (the quantizer shares it). The scales each NPU upsamples
by are its back end's limits.
"""

from __future__ import annotations

import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..tflite.builder import options
from ..tflite.layout import Layout
from .common import shared_quantization
from .registry import register

_aten = exir_ops.edge.aten
A = torch.ops.aten


def _resize(ctx, a, builtin, opts_name, **fields):
    b = ctx.builder
    x = ctx.value(a["input"], Layout.CHANNELS_LAST)
    size = b.int32_vector(a.node.name + "_size", a.out_shape[2:])
    out = ctx.emit_output(a.node, Layout.CHANNELS_LAST, quant=x.quant)
    b.op(builtin, [x.tensor, size], [out.tensor], options(opts_name, **fields))


@register(_aten.upsample_bilinear2d.vec, constraints=(shared_quantization(),),
          preserve="if_delegated",
          quantize={"shared": (A.upsample_bilinear2d.vec, A.upsample_bilinear2d.default)}, int16=True)
def convert_upsample_bilinear(ctx, a):
    """Bilinear upsampling; align_corners=False is TFLite's half_pixel_centers, True is its align_corners."""
    ac = bool(a["align_corners"])
    _resize(ctx, a, schema.BuiltinOperator.RESIZE_BILINEAR, "ResizeBilinearOptionsT", alignCorners=ac,
            halfPixelCenters=not ac)


@register(_aten.upsample_nearest2d.vec, constraints=(shared_quantization(),),
          preserve="if_delegated",
          quantize={"shared": (A.upsample_nearest2d.vec, A.upsample_nearest2d.default)}, int16=True)
def convert_upsample_nearest(ctx, a):
    """Nearest upsampling: PyTorch's 'nearest' picks floor(out * in / out_size), TFLite's default mode."""
    _resize(ctx, a, schema.BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, "ResizeNearestNeighborOptionsT",
            alignCorners=False, halfPixelCenters=False)

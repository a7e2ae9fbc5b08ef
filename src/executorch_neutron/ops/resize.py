"""Upsampling: upsample_bilinear2d / upsample_nearest2d -> TFLite RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR.

LiteRT's int8 resize kernels keep the input's quantization (NeutronQuantizer shares it).
"""

from __future__ import annotations

import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..tflite.builder import options
from ..tflite.layout import Layout
from .common import shared_quantization
from .limits import UPSAMPLE_SCALES, UPSAMPLE_SCALES_SDK, one_of
from .registry import NEUTRON, constraint, documented_only, register

_aten = exir_ops.edge.aten
A = torch.ops.aten


def _scales(a):
    """(H scale, W scale) of an upsample node from its input and output shapes."""
    n, c, h, w = a.shape("input")
    _, _, oh, ow = a.out_shape
    return oh / h, ow / w


@constraint("channels % {num_macs} == 0", hint="pad the channel count to a multiple of {num_macs}", profiles={"documented"},
            backends=NEUTRON)
def _up_channels(a, ctx):
    c = a.shape("input")[1]
    return None if c % ctx.num_macs == 0 else f"channels {c} not a multiple of {ctx.num_macs}"


def _sdk_scales_reason(a, align_corners: bool = False) -> str | None:
    """None when H and W scales are each one of UPSAMPLE_SCALES_SDK (with align_corners: (out - 1) / (in - 1))."""
    if len(a.shape("input")) != 4:
        return f"rank {len(a.shape('input'))}: upsampling needs a rank-4 input"
    if align_corners:
        (h, w), (oh, ow) = a.shape("input")[2:], a.out_shape[2:]
        if 1 in (h, w):
            return "align_corners with an input of size 1"
        sh, sw = (oh - 1) / (h - 1), (ow - 1) / (w - 1)
    else:
        sh, sw = _scales(a)
    if sh not in UPSAMPLE_SCALES_SDK or sw not in UPSAMPLE_SCALES_SDK:
        return f"scales H {sh:g}, W {sw:g}: Neutron upsamples by {one_of(UPSAMPLE_SCALES_SDK)}"
    return None


@constraint(f"H and W scales each {one_of(UPSAMPLE_SCALES_SDK)}", profiles={"sdk-current"}, backends=NEUTRON)
def _nearest_scales(a, ctx):
    return _sdk_scales_reason(a)


@constraint(f"H and W scales each {one_of(UPSAMPLE_SCALES_SDK)} (with align_corners: (out - 1) / (in - 1)), or "
            f"H scale == W scale, {one_of(UPSAMPLE_SCALES)}", profiles={"sdk-current"}, backends=NEUTRON)
def _bilinear_scales(a, ctx):
    reason = _sdk_scales_reason(a, bool(a["align_corners"]))
    return None if reason is None or _up_scale.check(a, ctx) is None else reason


@constraint(f"H scale == W scale, {one_of(UPSAMPLE_SCALES)}")
def _up_scale(a, ctx):
    if len(a.shape("input")) != 4:
        return f"rank {len(a.shape('input'))}: upsampling needs a rank-4 input"
    sh, sw = _scales(a)
    if sh != sw or sh not in UPSAMPLE_SCALES:
        return f"scales H {sh:g}, W {sw:g}: Neutron upsamples by {one_of(UPSAMPLE_SCALES)}, equal in H and W"
    return None


def _resize(ctx, a, builtin, opts_name, **fields):
    b = ctx.builder
    x = ctx.value(a["input"], Layout.CHANNELS_LAST)
    size = b.int32_vector(a.node.name + "_size", a.out_shape[2:])
    out = ctx.emit_output(a.node, Layout.CHANNELS_LAST, quant=x.quant)
    b.op(builtin, [x.tensor, size], [out.tensor], options(opts_name, **fields))


@register(_aten.upsample_bilinear2d.vec, constraints=(_up_channels, documented_only(_up_scale), _bilinear_scales,
                                                     shared_quantization()),
          preserve="if_delegated",
          quantize={"shared": (A.upsample_bilinear2d.vec, A.upsample_bilinear2d.default)})
def convert_upsample_bilinear(ctx, a):
    """Bilinear upsampling; align_corners=False is TFLite's half_pixel_centers, True is its align_corners."""
    ac = bool(a["align_corners"])
    _resize(ctx, a, schema.BuiltinOperator.RESIZE_BILINEAR, "ResizeBilinearOptionsT", alignCorners=ac,
            halfPixelCenters=not ac)


@register(_aten.upsample_nearest2d.vec, constraints=(_up_channels, documented_only(_up_scale), _nearest_scales,
                                                    shared_quantization()),
          preserve="if_delegated",
          quantize={"shared": (A.upsample_nearest2d.vec, A.upsample_nearest2d.default)})
def convert_upsample_nearest(ctx, a):
    """Nearest upsampling: PyTorch's 'nearest' picks floor(out * in / out_size), TFLite's default mode."""
    _resize(ctx, a, schema.BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, "ResizeNearestNeighborOptionsT",
            alignCorners=False, halfPixelCenters=False)

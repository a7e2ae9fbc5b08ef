"""Data movement: view_copy (reshape), permute_copy, cat, constant_pad_nd, clone.

Reshape and permute are defined on PyTorch's order, so their input is taken in natural layout (the context
inserts the transpose, or a reshape when only size-1 dims move) and a rank-4 result is handed on as it is.
cat and pad map their logical axes through layout.py. All need equal input/output quantization in LiteRT.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..tflite.builder import options
from ..tflite.layout import Layout, logical_perm_to_physical, physical_axis, to_physical_perm
from .pooling import shared_quantization
from .registry import constraint, register

_aten = exir_ops.edge.aten


@register(_aten.view_copy.default, noop=True, constraints=(shared_quantization(),), shared_qparams=True)
def convert_view(ctx, a):
    """Reshape (no data movement in PyTorch order)."""
    b = ctx.builder
    x = ctx.value(a["self"], Layout.NATURAL)
    out_shape = a.out_shape
    out = ctx.emit_output(a.node, Layout.NATURAL, quant=x.quant)
    st = b.int32_vector(a.node.name + "_shape", out_shape)
    b.op(schema.BuiltinOperator.RESHAPE, [x.tensor, st], [out.tensor], options("ReshapeOptionsT", newShape=list(out_shape)))


@register(_aten.clone.default, noop=True, constraints=(shared_quantization(),), shared_qparams=True)
def convert_clone(ctx, a):
    """Copy: the result aliases its input's tensor."""
    ctx.bind(a.node, ctx.value(a["self"]))


@register(_aten.permute_copy.default, constraints=(shared_quantization(),), shared_qparams=True)
def convert_permute(ctx, a):
    """Transpose by `dims`, composed with the layouts of input and result into one TRANSPOSE."""
    b = ctx.builder
    x = ctx.value(a["self"])
    rank = len(x.shape)
    dims = [d % rank for d in a["dims"]]
    dst = Layout.preferred(rank)
    perm = logical_perm_to_physical(dims, x.layout, dst)
    if perm == tuple(range(rank)):  # the layout change already is the permutation
        ctx.bind(a.node, type(x)(x.tensor, tuple(a.out_shape), dst, x.quant))
        return
    out = ctx.emit_output(a.node, dst, quant=x.quant)
    pt = b.int32_vector(a.node.name + "_perm", perm)
    b.op(schema.BuiltinOperator.TRANSPOSE, [x.tensor, pt], [out.tensor], options("TransposeOptionsT"))


@constraint("input channels % 8 == 0 and output channels % 8 == 0 (rank-4 concatenation)")
def _cat_channels(a, ctx):
    tensors = a["tensors"]
    shapes = [a.shape_of(t) for t in tensors]
    if len(shapes[0]) != 4:
        return None
    for s in shapes + [a.out_shape]:
        if s[1] % ctx.num_macs:
            return f"channels {s[1]} not a multiple of {ctx.num_macs}"
    return None


@constraint("equal quantization of all inputs and the output")
def _cat_shared(a, ctx):
    from .. import qdq

    params = [qdq.qparams(t) for t in a["tensors"] if qdq.is_dq(t)]
    outs = [qdq.qparams(u) for u in a.node.users if qdq.is_q(u)]
    ref = outs[0] if outs else (params[0] if params else None)
    if ref is not None and any(not p.same_as(ref) for p in params + outs):
        return "inputs and output quantized differently: LiteRT needs one set (NeutronQuantizer shares them)"
    return None


@register(_aten.cat.default, constraints=(_cat_channels, _cat_shared), shared_qparams=True)
def convert_cat(ctx, a):
    """Concatenation along `dim`."""
    rank = len(a.out_shape)
    layout = Layout.preferred(rank)
    xs = [ctx.value(t, layout) for t in a["tensors"]]
    out = ctx.emit_output(a.node, layout, quant=xs[0].quant)
    axis = physical_axis(a["dim"], rank, layout)
    ctx.builder.op(schema.BuiltinOperator.CONCATENATION, [x.tensor for x in xs], [out.tensor],
                   options("ConcatenationOptionsT", axis=axis))


@constraint("padding of H or W only (the last two dimensions)")
def _pad_hw(a, ctx):
    pad = list(a["pad"])
    rank = len(a.shape("self"))
    if len(pad) > 4 or (rank < 2):
        return f"padding {pad} reaches beyond H and W"
    return None


@register(_aten.constant_pad_nd.default, constraints=(_pad_hw, shared_quantization()), shared_qparams=True)
def convert_constant_pad(ctx, a):
    """Constant padding of the last two dimensions, with the pad value quantized to the input's parameters."""
    b = ctx.builder
    x = ctx.value(a["self"])
    rank = len(x.shape)
    pad = list(a["pad"])
    logical = np.zeros((rank, 2), dtype=np.int32)
    for i in range(len(pad) // 2):
        logical[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    paddings = logical[list(to_physical_perm(rank, x.layout))]
    scale, zp = x.quant.scale[0], x.quant.zero_point[0]
    value = int(np.clip(np.round(float(a["value"] or 0.0) / scale) + zp, -128, 127))
    pt = b.constant(a.node.name + "_paddings", paddings)
    vt = b.constant(a.node.name + "_value", np.asarray(value, dtype=np.int8), x.quant)
    out = ctx.emit_output(a.node, x.layout, quant=x.quant)
    b.op(schema.BuiltinOperator.PADV2, [x.tensor, pt, vt], [out.tensor], options("PadV2OptionsT"))


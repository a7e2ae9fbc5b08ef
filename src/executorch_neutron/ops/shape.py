"""Data movement: view / squeeze / unsqueeze (reshape), permute_copy, slice_copy, cat, constant_pad_nd, reflection
padding (pad), clone.

Reshape and permute are defined on PyTorch's order, so their input is taken in natural layout (the context
inserts the transpose, or a reshape when only size-1 dims move) and a rank-4 result is handed on as it is.
cat and pad map their logical axes through layout.py. All need equal input/output quantization in LiteRT.
"""

from __future__ import annotations

import numpy as np
import torch
from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops

from ..core import qdq
from ..tflite.builder import options
from ..tflite.layout import (
    Layout,
    logical_perm_to_physical,
    physical_axis,
    physical_shape,
    to_physical_perm,
)
from .common import is_dq, is_q, shared_quantization
from .limits import EXPAND_CAT_INPUTS, PERMUTE_RANK
from .registry import constraint, register

_aten = exir_ops.edge.aten
A = torch.ops.aten


_DIM_ORDER_CLONE = exir_ops.edge.dim_order_ops._clone_dim_order.default


@register(_aten.squeeze_copy.default, _aten.squeeze_copy.dim, _aten.squeeze_copy.dims, _aten.unsqueeze_copy.default,
          noop=True, alone=True, constraints=(shared_quantization(),), quantize={"shared": (
              A.squeeze.default, A.squeeze.dim, A.squeeze.dims, A.unsqueeze.default)}, int16=True)
@register(_aten.view_copy.default, noop=True, constraints=(shared_quantization(),), quantize={"shared": (
              A.view.default, A.reshape.default, A._unsafe_view.default, A.flatten.using_ints, A.unflatten.int)},
          int16=True)
def convert_view(ctx, a):
    """Reshape (no data movement in PyTorch order); squeeze and unsqueeze are reshapes too. A flatten of a
    channels-last value read only by linear layers reshapes it as it lies (no TRANSPOSE): the linears take their
    weight columns in that order (`ctx.channels_last_flattens`)."""
    b = ctx.builder
    out_shape = a.out_shape
    src = ctx.value(a["self"])
    if _flatten_into_linears(a, src):
        out = ctx.emit_output(a.node, Layout.NATURAL, quant=src.quant)
        ctx.channels_last_flattens[out.tensor] = tuple(src.shape)
        st = b.int32_vector(a.node.name + "_shape", out_shape)
        b.op(schema.BuiltinOperator.RESHAPE, [src.tensor, st], [out.tensor],
             options("ReshapeOptionsT", newShape=list(out_shape)))
        return
    x = ctx.value(a["self"], Layout.NATURAL)
    out = ctx.emit_output(a.node, Layout.NATURAL, quant=x.quant)
    st = b.int32_vector(a.node.name + "_shape", out_shape)
    b.op(schema.BuiltinOperator.RESHAPE, [x.tensor, st], [out.tensor], options("ReshapeOptionsT", newShape=list(out_shape)))


def _readers(node) -> list:
    """The nodes reading `node`'s value, through quantize / dequantize nodes."""
    out = []
    for user in node.users:
        out += _readers(user) if qdq.is_qdq(user) else [(user, node)]
    return out


def _flatten_into_linears(a, src) -> bool:
    """`a` flattens a channels-last rank-4 value to [N, C*H*W] and only linear layers read the result, as input."""
    shape = src.shape
    if src.layout is not Layout.CHANNELS_LAST or len(shape) != 4 or tuple(a.out_shape) != (
            shape[0], shape[1] * shape[2] * shape[3]):
        return False
    readers = _readers(a.node)
    return bool(readers) and all(u.target == _aten.linear.default and u.args[0] is via for u, via in readers)


@constraint("contiguous result (no dim_order other than the default)")
def _default_dim_order(a, ctx):
    order = a.get("dim_order")
    if order is not None and list(order) != list(range(len(a.out_shape))):
        return f"dim_order {list(order)}"
    return None


@register(_aten.clone.default, _DIM_ORDER_CLONE, noop=True, constraints=(_default_dim_order, shared_quantization()),
          quantize={"shared": (A.clone.default,)}, int16=True)
def convert_clone(ctx, a):
    """Copy: the result aliases its input's tensor."""
    ctx.bind(a.node, ctx.value(a["self"]))


@constraint(f"rank <= {PERMUTE_RANK}; for rank 3 and 4 the batch dimension stays first unless it is 1 (inferred: Neutron "
            "transposes within its 4D NHWC tensors and processes one batch item at a time)",
            hint="pass custom_delegation_options=('allow_any_permutation',) to delegate other transpositions")
def _permutation(a, ctx):
    """Neutron's transpose kernel works on its NHWC data layout: at most 4 dims, one batch item at a time."""
    if ctx.allows("allow_any_permutation"):
        return None
    shape = a.shape("self")
    dims = [d % len(shape) for d in a["dims"]]
    if len(shape) > PERMUTE_RANK:
        return f"a rank-{len(shape)} permutation"
    if len(shape) >= 3 and dims[0] != 0 and shape[0] != 1:
        return f"permutation {dims} moves the batch dimension (size {shape[0]})"
    return None


@register(_aten.permute_copy.default, constraints=(_permutation, shared_quantization()),
          quantize={"shared": (A.permute.default, A.transpose.int, A.t.default)}, int16=True)
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


@constraint("equal quantization of all inputs and the output (LiteRT's int8 kernel needs one set)")
def _cat_shared(a, ctx):
    params = [qdq.qparams(t) for t in a["tensors"] if is_dq(t)]
    outs = [qdq.qparams(u) for u in a.node.users if is_q(u)]
    ref = outs[0] if outs else (params[0] if params else None)
    if ref is not None and any(not p.same_as(ref) for p in params + outs):
        return "inputs and output quantized differently"
    return None


@register(_aten.cat.default, constraints=(_cat_shared,), quantize={"concat": (A.cat.default, A.concat.default)},
          int16=True)
def convert_cat(ctx, a):
    """Concatenation along `dim`."""
    rank = len(a.out_shape)
    layout = Layout.preferred(rank)
    xs = [ctx.value(t, layout) for t in a["tensors"]]
    out = ctx.emit_output(a.node, layout, quant=xs[0].quant)
    axis = physical_axis(a["dim"], rank, layout)
    ctx.builder.op(schema.BuiltinOperator.CONCATENATION, [x.tensor for x in xs], [out.tensor],
                   options("ConcatenationOptionsT", axis=axis))


@constraint("non-negative padding of any dims", profiles={"sdk-current"})
def _pad_any(a, ctx):
    pad = list(a["pad"])
    return f"negative padding {pad} (cropping)" if any(p < 0 for p in pad) else None


@register(_aten.constant_pad_nd.default, constraints=(_pad_any, shared_quantization()),
          quantize={"shared": (A.pad.default, A.constant_pad_nd.default)}, int16=True)
def convert_constant_pad(ctx, a):
    """Constant padding (of any dims), with the pad value quantized to the input's parameters."""
    b = ctx.builder
    x = ctx.value(a["self"])
    scale, zp = x.quant.scale[0], x.quant.zero_point[0]
    info = np.iinfo(x.quant.storage)
    value = int(np.clip(np.round(float(a["value"] or 0.0) / scale) + zp, info.min, info.max))
    pt = _paddings(ctx, a, x)
    vt = b.constant(a.node.name + "_value", np.asarray(value, dtype=x.quant.storage), x.quant)
    out = ctx.emit_output(a.node, x.layout, quant=x.quant)
    b.op(schema.BuiltinOperator.PADV2, [x.tensor, pt, vt], [out.tensor], options("PadV2OptionsT"))


def _paddings(ctx, a, x):
    """The TFLite [rank, 2] paddings tensor of PyTorch's `pad` list (last dim first) for value `x`'s layout."""
    rank = len(x.shape)
    pad = list(a["pad"])
    logical = np.zeros((rank, 2), dtype=np.int32)
    for i in range(len(pad) // 2):
        logical[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return ctx.builder.constant(a.node.name + "_paddings", logical[list(to_physical_perm(rank, x.layout))])


@constraint("mode reflect (constant padding arrives as constant_pad_nd; replicate and circular padding as slices and "
            "a concatenation, except a negative (cropping) one)")
def _reflect(a, ctx):
    return None if a["mode"] == "reflect" else f"pad mode {a['mode']!r}"


@register(_aten.pad.default, constraints=(_reflect, _pad_any, shared_quantization()), preserve="if_delegated",
          profiles={"sdk-current"}, preserve_when=lambda a: a["mode"] != "constant", int16=True)
def convert_reflection_pad(ctx, a):
    """Reflection padding (of any dims): MIRROR_PAD in REFLECT mode (kept from decomposition by the partitioner
    when the NPU takes it)."""
    x = ctx.value(a["self"])
    out = ctx.emit_output(a.node, x.layout, quant=x.quant)
    ctx.builder.op(schema.BuiltinOperator.MIRROR_PAD, [x.tensor, _paddings(ctx, a, x)], [out.tensor],
                   options("MirrorPadOptionsT", mode=schema.MirrorPadMode.REFLECT))



@constraint("slices with step 1 only (a strided slice is not converted)")
def _slice_step(a, ctx):
    return None if a["step"] in (1, None) else f"step {a['step']}"


@register(_aten.slice_copy.Tensor, constraints=(_slice_step, shared_quantization()), quantize={"shared": (A.slice.Tensor,)},
          int16=True)
def convert_slice(ctx, a):
    """Contiguous slice [start, end) of one dimension (split becomes slices before quantization)."""
    b = ctx.builder
    shape = a.shape("self")
    rank = len(shape)
    layout = Layout.preferred(rank)
    x = ctx.value(a["self"], layout)
    dim = a["dim"] % rank
    size = shape[dim]
    start = 0 if a["start"] is None else a["start"]
    end = size if a["end"] is None else a["end"]
    start = min(max(start + size if start < 0 else start, 0), size)
    end = min(max(end + size if end < 0 else end, start), size)
    begin, stop = [0] * rank, list(physical_shape(shape, layout))
    axis = physical_axis(dim, rank, layout)
    begin[axis], stop[axis] = start, end
    bt = b.int32_vector(a.node.name + "_begin", begin)
    et = b.int32_vector(a.node.name + "_end", stop)
    st = b.int32_vector(a.node.name + "_strides", [1] * rank)
    out = ctx.emit_output(a.node, layout, quant=x.quant)
    b.op(schema.BuiltinOperator.STRIDED_SLICE, [x.tensor, bt, et, st], [out.tensor], options("StridedSliceOptionsT"))


#: why an expand reaches the partitioner (each back end's no-kernel reason for it ends with it)
EXPAND_LEFT = (f"left for an expand whose repeat count has a prime factor above {EXPAND_CAT_INPUTS} "
               "(passes/expand_to_cat.py writes the others as concatenations of copies)")

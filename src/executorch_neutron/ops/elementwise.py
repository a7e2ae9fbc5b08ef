"""Binary elementwise ops: add.Tensor, sub.Tensor, mul.Tensor, div.Tensor -> TFLite ADD / SUB / MUL (int8, with
requantization); maximum / minimum -> MAXIMUM / MINIMUM (operands and output share their quantization).

Both operands are brought to one layout (channels-last for rank 4); an operand may be a quantized constant. A
float scalar operand (mul by 0.5, or a division the div->mul pass did not see) is represented exactly in int8:
value c is stored as q = sign(c) with scale |c|. Division by a constant is a MUL by its reciprocal.
"""

from __future__ import annotations

import math

from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

import numpy as np
import torch

from ..core.qdq import qparams
from ..tflite.builder import Quant, Value, options
from ..tflite.layout import Layout, to_physical_perm
from .fusion import fused_code
from .common import is_dq, is_q
from .registry import NEUTRON, constraint, register

_aten = exir_ops.edge.aten
A = torch.ops.aten


@constraint("both operands are tensors")
def _tensor_operands(a, ctx):
    return None if isinstance(a["other"], Node) else "scalar operand: only tensor operands are converted"


@constraint("alpha 1")
def _alpha(a, ctx):
    return None if a["alpha"] in (1, None) else f"alpha {a['alpha']}: alpha 1 is converted"


def _is_scalar_operand(a, name: str) -> bool:
    node = a[name]
    return not isinstance(node, Node) or math.prod(a.shape(name)) == 1


@constraint("inputs of equal shape, or a scalar operand", profiles={"documented"}, backends=NEUTRON)
def _equal_shapes(a, ctx):
    s, o = a.shape("self"), a.shape("other")
    if s == o or _is_scalar_operand(a, "self") or _is_scalar_operand(a, "other"):
        return None
    return f"input shapes {list(s)} and {list(o)} differ (broadcasting is not in the documented table)"


def _broadcast_reason(a) -> str | None:
    if not isinstance(a["other"], Node):
        return None
    n = math.prod(a.out_shape)
    s, o = a.shape("self"), a.shape("other")
    if n in (math.prod(s), math.prod(o)):
        return None
    return (f"input shapes {list(s)} and {list(o)} both broadcast to the output {list(a.out_shape)}: Neutron "
            "broadcasts only onto an operand of the output's size")


@constraint("one operand has as many elements as the output (the other, of any rank, broadcasts onto it)",
            profiles={"sdk-current"}, backends=NEUTRON)
def _broadcast(a, ctx):
    return _broadcast_reason(a)


@constraint("one operand has as many elements as the output (the other, of any rank, broadcasts onto it), or "
            "operands of equal rank (any broadcasting)", profiles={"sdk-current"}, backends=NEUTRON)
def _mul_broadcast(a, ctx):
    if isinstance(a["other"], Node) and len(a.shape("self")) == len(a.shape("other")):
        return None
    return _broadcast_reason(a)


@constraint("tensor size % {num_macs} == 0", profiles={"documented"}, backends=NEUTRON)
def _size_multiple(a, ctx):
    size = math.prod(a.out_shape)
    return None if size % ctx.num_macs == 0 else f"tensor size {size} not a multiple of {ctx.num_macs}"


def _float_constant(a, ctx, name: str) -> torch.Tensor | None:
    """The float tensor behind operand `name` when it is an unquantized constant (lifted scalar or tensor)."""
    node = a[name]
    if not ctx.is_constant(node):
        return None
    val = node.meta.get("val")
    return val if val is not None and val.dtype.is_floating_point else None


@constraint("each operand int8, or a float constant scalar (float constant tensors: custom option "
            "allow_float_constants)", hint="quantize the constant with NeutronQuantizer, or pass "
            "custom_delegation_options=('allow_float_constants',)")
def _operands_int8(a, ctx):
    for name in ("self", "other"):
        val = _float_constant(a, ctx, name)
        if val is not None and val.numel() > 1 and not ctx.allows("allow_float_constants"):
            return f"operand {a[name].name} is an unquantized float constant tensor"
    return None


def _operand(ctx, a, name: str, layout: Layout, rank: int, reciprocal: bool = False) -> Value:
    """Operand `name` as an int8 tensor of `rank` dims (size-1 dims prepended) in `layout`; float constants are
    quantized here (scalars exactly)."""
    node = a[name]
    extend = lambda data: data.reshape((1,) * (rank - data.ndim) + data.shape)  # noqa: E731
    if not is_dq(node):
        t = ctx.constant_tensor(node)
        if t is not None and t.dtype.is_floating_point:
            data = t.detach().double().numpy()
            if reciprocal:
                data = 1.0 / data
            return _quantized_float(ctx, node.name + ("_recip" if reciprocal else ""), extend(data), layout)
    if reciprocal:  # dq(int8 constant): dequantize, invert, requantize
        c = ctx.quantized_constant(node)
        real = (c.data.astype(np.float64) - c.quant.zero_point[0]) * c.quant.scale[0]
        return _quantized_float(ctx, node.name + "_recip", extend(1.0 / real), layout)
    return ctx.value_at_rank(node, rank, layout)


def _quantized_float(ctx, name: str, data: np.ndarray, layout: Layout) -> Value:
    shape = tuple(data.shape)
    if data.size == 1:
        c = float(data.reshape(-1)[0])
        q, quant = np.full(shape, 1 if c >= 0 else -1, dtype=np.int8), Quant.per_tensor(abs(c) or 1.0, 0)
        if c == 0:
            q[...] = 0
    else:
        scale = float(np.abs(data).max()) / 127 or 1.0
        q, quant = np.clip(np.round(data / scale), -127, 127).astype(np.int8), Quant.per_tensor(scale, 0)
    if len(shape) != 4:
        layout = Layout.NATURAL
    phys = np.transpose(q, to_physical_perm(len(shape), layout)) if layout is Layout.CHANNELS_LAST else q
    return Value(ctx.builder.constant(name, phys, quant), shape, layout, quant)


def binary(ctx, a, builtin: int, opts, reciprocal: bool = False) -> None:
    """An elementwise TFLite op; an operand of lower rank than the result is extended with leading size-1 dims
    (TFLite then broadcasts it as PyTorch does)."""
    rank = len(a.out_shape)
    layout = Layout.preferred(rank)
    x = _operand(ctx, a, "self", layout, rank)
    y = _operand(ctx, a, "other", layout, rank, reciprocal)
    out = ctx.emit_output(a.node, layout)
    ctx.builder.op(builtin, [x.tensor, y.tensor], [out.tensor], opts)


@register(_aten.add.Tensor, constraints=(_tensor_operands, _alpha, _equal_shapes, _broadcast, _operands_int8), fuses_activation=True,
          quantize={"binary": (A.add.Tensor, A.add_.Tensor)})
def convert_add(ctx, a):
    """Elementwise sum (with broadcasting), optional fused relu."""
    binary(ctx, a, schema.BuiltinOperator.ADD, options("AddOptionsT", fusedActivationFunction=fused_code(a.node)))


@register(_aten.sub.Tensor, constraints=(_tensor_operands, _alpha, _equal_shapes, _broadcast, _operands_int8),
          profiles={"sdk-current"}, quantize={"binary": (A.sub.Tensor, A.sub_.Tensor, A.rsub.Scalar)})
def convert_sub(ctx, a):
    """Elementwise difference (in NXP's current SDK, not in the documented table)."""
    binary(ctx, a, schema.BuiltinOperator.SUB, options("SubOptionsT"))


@constraint("operands of equal rank, or a scalar operand", profiles={"documented"}, backends=NEUTRON)
def _equal_rank_or_scalar(a, ctx):
    if not isinstance(a["other"], Node):
        return None
    s, o = a.shape("self"), a.shape("other")
    if len(s) == len(o) or 1 in (math.prod(s), math.prod(o)):
        return None
    return f"operand ranks {len(s)} and {len(o)} differ"



@register(_aten.mul.Tensor, constraints=(_tensor_operands, _equal_rank_or_scalar, _mul_broadcast, _size_multiple,
                                                 _operands_int8),
          fuses_activation=True, quantize={"binary": (A.mul.Tensor, A.mul_.Tensor)})
def convert_mul(ctx, a):
    """Elementwise product (with broadcasting), optional fused relu."""
    binary(ctx, a, schema.BuiltinOperator.MUL, options("MulOptionsT", fusedActivationFunction=fused_code(a.node)))


@constraint("divisor a static tensor or scalar (division by a computed tensor stays on the CPU)")
def _static_divisor(a, ctx):
    d = a["other"]
    if not isinstance(d, Node):
        return None
    if ctx.is_constant_operand(d):
        val = (d if ctx.is_constant(d) else d.args[0]).meta.get("val")
        if val is not None and val.numel() > 1 and not ctx.allows("allow_float_constants"):
            return ("division by a constant tensor: its reciprocal would be requantized by the converter "
                    "(the div->mul pass of NeutronQuantizer avoids this)")
        return None
    src = d.args[0] if is_dq(d) and isinstance(d.args[0], Node) else d
    return (f"divisor {src.name} is computed at run time: Neutron has no division kernel, it divides by constants "
            f"only (as a multiplication by the reciprocal)")


@constraint("one dimension % {num_macs} == 0, or scalar division", backends=NEUTRON)
def _div_dims(a, ctx):
    d = a["other"]
    if not isinstance(d, Node) or math.prod(a.shape("other")) == 1:
        return None
    shape = a.out_shape
    if any(s % ctx.num_macs == 0 for s in shape):
        return None
    return f"no dimension of {list(shape)} is a multiple of {ctx.num_macs}"


@register(_aten.div.Tensor, constraints=(_static_divisor, _equal_rank_or_scalar, _broadcast, _div_dims),
          quantize={"binary_scalar_divisor": (A.div.Tensor,)})
def convert_div(ctx, a):
    """Division by a constant: MUL by the reciprocal (exact for scalars)."""
    binary(ctx, a, schema.BuiltinOperator.MUL, options("MulOptionsT"), reciprocal=True)


@constraint("both operands and the output quantized alike (NeutronQuantizer shares them)")
def _all_shared(a, ctx):
    users = [u for u in a.node.users if is_q(u)]
    operands = [a[n] for n in ("self", "other") if isinstance(a[n], Node)]
    if not users or not all(is_dq(o) for o in operands):
        return None  # reported by the generic int8 check
    out = qparams(users[0])
    for o in operands:
        if not qparams(o).same_as(out):
            return f"operand {o.name} is quantized differently from the output: LiteRT needs them equal"
    return None


@register(_aten.maximum.default, constraints=(_broadcast, _all_shared), profiles={"sdk-current"},
          quantize={"shared_operands": (A.maximum.default,)})
def convert_maximum(ctx, a):
    """Elementwise maximum (with broadcasting)."""
    binary(ctx, a, schema.BuiltinOperator.MAXIMUM, None)


@register(_aten.minimum.default, constraints=(_broadcast, _all_shared), profiles={"sdk-current"},
          quantize={"shared_operands": (A.minimum.default,)})
def convert_minimum(ctx, a):
    """Elementwise minimum (with broadcasting)."""
    binary(ctx, a, schema.BuiltinOperator.MINIMUM, None)

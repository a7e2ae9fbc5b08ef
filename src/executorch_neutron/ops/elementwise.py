"""Binary elementwise ops: add.Tensor, sub.Tensor, mul.Tensor, div.Tensor -> TFLite ADD / SUB / MUL (int8, with
requantization); maximum / minimum -> MAXIMUM / MINIMUM (operands and output share their quantization).

Both operands are brought to one layout (channels-last for rank 4); an operand may be a quantized constant. A
float scalar operand (mul by 0.5, or a division the div->mul pass did not see) is represented exactly in int8:
value c is stored as q = sign(c) with scale |c|. Division by a constant is a MUL by its reciprocal.
"""

from __future__ import annotations

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
from .registry import constraint, register, runs

_aten = exir_ops.edge.aten
A = torch.ops.aten


@constraint("both operands are tensors")
def _tensor_operands(a, ctx):
    return None if isinstance(a["other"], Node) else f"scalar operand {a['other']}"


@constraint("alpha 1")
def _alpha(a, ctx):
    return None if a["alpha"] in (1, None) else f"alpha {a['alpha']}"


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
            return _quantized_float(ctx, node.name + ("_recip" if reciprocal else ""), extend(data), layout,
                                    ctx.output_quant(a.node).dtype)
    if reciprocal:  # dq(int8 constant): dequantize, invert, requantize
        c = ctx.quantized_constant(node)
        real = (c.data.astype(np.float64) - c.quant.zero_point[0]) * c.quant.scale[0]
        return _quantized_float(ctx, node.name + "_recip", extend(1.0 / real), layout, ctx.output_quant(a.node).dtype)
    return ctx.value_at_rank(node, rank, layout)


def _quantized_float(ctx, name: str, data: np.ndarray, layout: Layout, dtype: str = "int8") -> Value:
    """A float constant as a symmetric constant of the op's type (`dtype`: int8, or int16 under A16W8)."""
    shape = tuple(data.shape)
    storage = np.dtype(dtype)
    if data.size == 1:
        c = float(data.reshape(-1)[0])
        q, quant = np.full(shape, 1 if c >= 0 else -1, dtype=storage), Quant.per_tensor(abs(c) or 1.0, 0, dtype)
        if c == 0:
            q[...] = 0
    else:
        top = np.iinfo(storage).max
        scale = float(np.abs(data).max()) / top or 1.0
        q, quant = np.clip(np.round(data / scale), -top, top).astype(storage), Quant.per_tensor(scale, 0, dtype)
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


@register(_aten.add.Tensor, constraints=(_tensor_operands, _alpha, _operands_int8), fuses_activation=True,
          quantize={"binary": (A.add.Tensor, A.add_.Tensor)}, int16=True)
def convert_add(ctx, a):
    """Elementwise sum (with broadcasting), optional fused relu."""
    binary(ctx, a, schema.BuiltinOperator.ADD, options("AddOptionsT", fusedActivationFunction=fused_code(a.node)))


@register(_aten.sub.Tensor, constraints=(_tensor_operands, _alpha, _operands_int8),
          profiles={"sdk-current"}, quantize={"binary": (A.sub.Tensor, A.sub_.Tensor, A.rsub.Scalar)}, int16=True)
def convert_sub(ctx, a):
    """Elementwise difference (in NXP's current SDK, not in the documented table)."""
    binary(ctx, a, schema.BuiltinOperator.SUB, options("SubOptionsT"))


@register(_aten.mul.Tensor, constraints=(_tensor_operands, _operands_int8),
          fuses_activation=True, quantize={"binary": (A.mul.Tensor, A.mul_.Tensor)}, int16=True)
def convert_mul(ctx, a):
    """Elementwise product (with broadcasting), optional fused relu."""
    binary(ctx, a, schema.BuiltinOperator.MUL, options("MulOptionsT", fusedActivationFunction=fused_code(a.node)))


@constraint("divisor a constant: there is no division kernel, the NPU multiplies by the reciprocal (a constant tensor "
            "only with allow_float_constants: its reciprocal is requantized; the div->mul pass of NeutronQuantizer "
            "avoids this)")
def _static_divisor(a, ctx):
    d = a["other"]
    if not isinstance(d, Node):
        return None
    if ctx.is_constant_operand(d):
        val = (d if ctx.is_constant(d) else d.args[0]).meta.get("val")
        if val is not None and val.numel() > 1 and not ctx.allows("allow_float_constants"):
            return f"divisor {d.name}, a constant tensor"
        return None
    src = d
    while (is_dq(src) or is_q(src)) and isinstance(src.args[0], Node):
        src = src.args[0]  # the op that computes the divisor
    why = (f"this table ({ctx.profile}) has no RSQRT" if not runs(_aten.rsqrt.default, ctx.backend, ctx.profile)
           else "its sign is not known")
    return (f"divisor {src.name} is computed at run time and {why} (div_by_tensor_to_rsqrt writes a / b as "
            "(a * rsqrt(b)) * rsqrt(b) where b is never negative and the table runs RSQRT), so the division runs "
            "on the CPU in float")


@register(_aten.div.Tensor, constraints=(_static_divisor,),
          quantize={"binary_scalar_divisor": (A.div.Tensor,)}, int16=True)
def convert_div(ctx, a):
    """Division by a constant: MUL by the reciprocal (exact for scalars)."""
    binary(ctx, a, schema.BuiltinOperator.MUL, options("MulOptionsT"), reciprocal=True)


@constraint("both operands and the output quantized alike (LiteRT's int8 kernel needs them equal)")
def _all_shared(a, ctx):
    users = [u for u in a.node.users if is_q(u)]
    operands = [a[n] for n in ("self", "other") if isinstance(a[n], Node)]
    if not users or not all(is_dq(o) for o in operands):
        return None  # reported by the generic int8 check
    out = qparams(users[0])
    for o in operands:
        if not qparams(o).same_as(out):
            return f"operand {o.name} quantized differently from the output"
    return None


@register(_aten.maximum.default, constraints=(_all_shared,), profiles={"sdk-current"},
          quantize={"shared_operands": (A.maximum.default,)}, int16=True)
def convert_maximum(ctx, a):
    """Elementwise maximum (with broadcasting)."""
    binary(ctx, a, schema.BuiltinOperator.MAXIMUM, None)


@register(_aten.minimum.default, constraints=(_all_shared,), profiles={"sdk-current"},
          quantize={"shared_operands": (A.minimum.default,)}, int16=True)
def convert_minimum(ctx, a):
    """Elementwise minimum (with broadcasting)."""
    binary(ctx, a, schema.BuiltinOperator.MINIMUM, None)

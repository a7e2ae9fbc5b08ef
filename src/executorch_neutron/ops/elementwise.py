"""Binary elementwise ops: add.Tensor, mul.Tensor -> TFLite ADD / MUL (int8, with requantization).

Both operands are brought to one layout (channels-last for rank 4); an operand may be a quantized constant.
"""

from __future__ import annotations

from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

from ..tflite.builder import options
from ..tflite.layout import Layout
from .fusion import fused_code
from .registry import constraint, register

_aten = exir_ops.edge.aten


@constraint("both operands are tensors")
def _tensor_operands(a, ctx):
    return None if isinstance(a["other"], Node) else "scalar operand: only tensor operands are converted"


@constraint("alpha 1")
def _alpha(a, ctx):
    return None if a["alpha"] in (1, None) else f"alpha {a['alpha']}: Neutron supports alpha 1"


@constraint("inputs of equal shape")
def _equal_shapes(a, ctx):
    s, o = a.shape("self"), a.shape("other")
    return None if s == o else f"input shapes {list(s)} and {list(o)} differ (broadcasting is not supported)"


@constraint("tensor size % 8 == 0")
def _size_multiple(a, ctx):
    size = 1
    for d in a.out_shape:
        size *= d
    return None if size % 8 == 0 else f"tensor size {size} not a multiple of 8"


@constraint("operands of equal rank")
def _equal_rank(a, ctx):
    s, o = a.shape("self"), a.shape("other")
    return None if len(s) == len(o) else f"operand ranks {len(s)} and {len(o)} differ"


def binary(ctx, a, builtin: int, opts) -> None:
    rank = len(a.out_shape)
    layout = Layout.preferred(rank)
    x = ctx.value(a["self"], layout)
    y = ctx.value(a["other"], layout)
    out = ctx.emit_output(a.node, layout)
    ctx.builder.op(builtin, [x.tensor, y.tensor], [out.tensor], opts)


@register(_aten.add.Tensor, constraints=(_tensor_operands, _alpha, _equal_shapes))
def convert_add(ctx, a):
    """Elementwise sum, optional fused relu."""
    binary(ctx, a, schema.BuiltinOperator.ADD, options("AddOptionsT", fusedActivationFunction=fused_code(a.node)))


@register(_aten.mul.Tensor, constraints=(_tensor_operands, _equal_rank, _size_multiple))
def convert_mul(ctx, a):
    """Elementwise product (broadcasting within equal ranks), optional fused relu."""
    binary(ctx, a, schema.BuiltinOperator.MUL, options("MulOptionsT", fusedActivationFunction=fused_code(a.node)))

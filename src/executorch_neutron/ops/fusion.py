"""Activation fusion: which producer ops absorb a following relu/relu6/hardtanh/clamp, and with which TFLite code.

A producer (conv, linear, add, mul) whose only user is a bounded activation computes both in one TFLite op: the
activation becomes the op's fused activation function (clamping in the quantized domain, exactly what quantizing
the clamped float result does). Shared by the partitioner (the pair is one cluster) and the converter.
"""

from __future__ import annotations

import math
import operator

from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

from .args import NodeArgs

_aten = exir_ops.edge.aten
ACTIVATIONS = {_aten.relu.default, _aten.hardtanh.default, _aten.clamp.default}
PRODUCERS = {
    _aten.convolution.default,
    _aten.linear.default,
    _aten.addmm.default,
    _aten.mm.default,
    _aten.add.Tensor,
    _aten.mul.Tensor,
}

# (lower, upper) bounds of an activation -> TFLite fused activation (and standalone op)
_CODES = {
    (0.0, math.inf): (schema.ActivationFunctionType.RELU, schema.BuiltinOperator.RELU),
    (0.0, 6.0): (schema.ActivationFunctionType.RELU6, schema.BuiltinOperator.RELU6),
    (-1.0, 1.0): (schema.ActivationFunctionType.RELU_N1_TO_1, schema.BuiltinOperator.RELU_N1_TO_1),
    (0.0, 1.0): (None, schema.BuiltinOperator.RELU_0_TO_1),
}
SUPPORTED_BOUNDS_TEXT = "(0, 6), (-1, 1), (0, 1) or (0, inf)"


def activation_bounds(node: Node) -> tuple[float, float] | None:
    if node.target not in ACTIVATIONS:
        return None
    if node.target == _aten.relu.default:
        return 0.0, math.inf
    a = NodeArgs(node)
    lo, hi = (a["min_val"], a["max_val"]) if node.target == _aten.hardtanh.default else (a["min"], a["max"])
    lo = -math.inf if lo is None else float(lo)
    hi = math.inf if hi is None else float(hi)
    return lo, hi


def activation_codes(node: Node):
    """(fused ActivationFunctionType or None, standalone BuiltinOperator) for a supported activation, else None."""
    bounds = activation_bounds(node)
    return _CODES.get(bounds) if bounds is not None else None


def fused_activation(node: Node) -> Node | None:
    """The activation node `node` absorbs, or None."""
    if node.op != "call_function" or node.target not in PRODUCERS or len(node.users) != 1:
        return None
    user = next(iter(node.users))
    codes = activation_codes(user)
    return user if codes is not None else None


def fused_code(node: Node) -> int:
    """The fused ActivationFunctionType for `node` (NONE when the bounds need a standalone op, see convert)."""
    act = fused_activation(node)
    code = activation_codes(act)[0] if act is not None else None
    return schema.ActivationFunctionType.NONE if code is None else code


def result_node(node: Node) -> Node:
    """The node that carries `node`'s result to its quantize users: its fused activation, or for ops returning
    a tuple (max_pool2d_with_indices) the getitem of output 0; else the node itself."""
    act = fused_activation(node)
    if act is not None:
        return act
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        getters = [u for u in node.users if u.target is operator.getitem and u.args[1] == 0]
        if len(getters) == 1:
            return getters[0]
    return node

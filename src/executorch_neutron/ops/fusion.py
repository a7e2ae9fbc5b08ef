"""Activation fusion: which producer ops absorb a following relu/relu6/hardtanh/clamp, and with which TFLite code.

A producer (a registry entry with `fuses_activation`: conv, linear, mm, addmm, add, mul) whose only user is a
bounded activation computes both in one TFLite op: the activation becomes the op's fused activation function
(clamping in the quantized domain, exactly what quantizing the clamped float result does). Only the bounds in
`_CODES` fuse. Shared by the quantizer (it fuses a pair only when `aten_fusable` says so), the partitioner (the pair
is one cluster) and the converter.
"""

from __future__ import annotations

import functools
import math
import operator

from ai_edge_litert import schema_py_generated as schema
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

from . import registry
from .args import NodeArgs

_aten = exir_ops.edge.aten
ACTIVATIONS = {_aten.relu.default, _aten.hardtanh.default, _aten.clamp.default}

# (lower, upper) bounds of an activation -> TFLite fused activation (and standalone op)
_CODES = {
    (0.0, math.inf): (schema.ActivationFunctionType.RELU, schema.BuiltinOperator.RELU),
    (0.0, 6.0): (schema.ActivationFunctionType.RELU6, schema.BuiltinOperator.RELU6),
    (-1.0, 1.0): (schema.ActivationFunctionType.RELU_N1_TO_1, schema.BuiltinOperator.RELU_N1_TO_1),
    (0.0, 1.0): (None, schema.BuiltinOperator.RELU_0_TO_1),
}
SUPPORTED_BOUNDS_TEXT = "(0, 6), (-1, 1), (0, 1) or (0, inf)"


def activation_bounds(node: Node) -> tuple[float, float] | None:
    """(lower, upper) of an edge relu / hardtanh / clamp node, or of the ATen ops they come from."""
    if node.target not in ACTIVATIONS and node.target not in _fusable_aten():
        return None
    name = registry.op_name(node.target).split(".")[1]
    if name in ("relu", "relu_"):
        return 0.0, math.inf
    if name == "relu6":
        return 0.0, 6.0
    a = NodeArgs(node)
    lo, hi = (a["min_val"], a["max_val"]) if name.startswith("hardtanh") else (a["min"], a["max"])
    lo = -math.inf if lo is None else float(lo)
    hi = math.inf if hi is None else float(hi)
    return lo, hi


def _aten_of(edge_targets) -> set:
    return {op for e in registry.entries() if set(e.targets) & set(edge_targets) for op, _ in e.quantize}


@functools.cache
def _fusable_aten() -> frozenset:
    return frozenset(_aten_of(ACTIVATIONS))


@functools.cache
def producers() -> frozenset:
    """Edge ops that absorb a following activation: the registry entries with `fuses_activation`."""
    return frozenset(t for e in registry.entries() if e.fuses_activation for t in e.targets)


def aten_activations() -> frozenset:
    """The ATen ops NeutronQuantizer may fuse into a producer (relu, relu6, hardtanh, clamp and in-place forms)."""
    return _fusable_aten()


def aten_fusable(node: Node) -> bool:
    """Whether an ATen activation node's bounds fuse into its producer (the converter's own test)."""
    bounds = activation_bounds(node) if node.target in _fusable_aten() else None
    return bounds is not None and bounds in _CODES


def activation_codes(node: Node):
    """(fused ActivationFunctionType or None, standalone BuiltinOperator) for a supported activation, else None."""
    bounds = activation_bounds(node)
    return activation_codes_for(bounds) if bounds is not None else None


def activation_codes_for(bounds: tuple[float, float]):
    """The codes of `activation_codes` for (lower, upper) bounds, or None when no RELU* op clamps to them."""
    return _CODES.get(bounds)


def fused_activation(node: Node) -> Node | None:
    """The activation node `node` absorbs, or None."""
    if node.op != "call_function" or node.target not in producers() or len(node.users) != 1:
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

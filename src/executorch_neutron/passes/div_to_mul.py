"""ATen pass: x / c -> x * (1 / c) for a scalar or constant-tensor divisor c.

Neutron has no int8 division; multiplication by the reciprocal is the same value (to float rounding) and maps to
an int8 MUL. Runs before quantization, so a constant reciprocal tensor is quantized like any other operand.
Divisions by a tensor computed from model inputs are left alone (they stay on the CPU).
"""

from __future__ import annotations

import numbers

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, constant, new_parameter, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, c = node.args[0], node.args[1]
    if isinstance(c, numbers.Number) and not isinstance(c, bool):
        return None if c == 0 else call(gm, aten.mul.Tensor, (x, 1.0 / float(c)), node)
    t = constant(gm, c)
    if t is None or not t.is_floating_point() or bool((t == 0).any()):
        return None
    return call(gm, aten.mul.Tensor, (x, new_parameter(gm, "_neutron_reciprocal", 1.0 / t.detach(), c)), node)


def div_to_mul(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.div.Tensor, aten.div.Scalar), _rewrite)

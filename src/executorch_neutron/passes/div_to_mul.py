"""ATen pass: x / c -> x * (1 / c) for a scalar or constant-tensor divisor c.

Neutron has no int8 division; multiplication by the reciprocal is the same value (to float rounding) and maps to
an int8 MUL. Runs before quantization, so a constant reciprocal tensor is quantized like any other operand.
Divisions by a tensor computed from model inputs are left alone (they stay on the CPU).
"""

from __future__ import annotations

import numbers

import torch
from torch.fx import GraphModule

from .fx_utils import call, constant, finish, new_parameter

aten = torch.ops.aten


def div_to_mul(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in (aten.div.Tensor, aten.div.Scalar):
            continue
        x, c = node.args[0], node.args[1]
        if isinstance(c, numbers.Number) and not isinstance(c, bool):
            if c == 0:
                continue
            with gm.graph.inserting_before(node):
                out = call(gm, aten.mul.Tensor, (x, 1.0 / float(c)), node)
        else:
            t = constant(gm, c)
            if t is None or not t.is_floating_point() or bool((t == 0).any()):
                continue
            with gm.graph.inserting_before(node):
                inv = new_parameter(gm, "_neutron_reciprocal", 1.0 / t.detach(), c)
                out = call(gm, aten.mul.Tensor, (x, inv), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

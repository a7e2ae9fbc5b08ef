"""ATen pass (Neutron targets): a binary op whose two operands both broadcast ([1, 4, 4, 1] + [1, 1, 4, 4] ->
[1, 4, 4, 4]) -> the same op with one operand first expanded to the output's shape.

Neutron's elementwise kernels broadcast one operand onto the other, which must already have as many elements as the
output (neutron/constraints.py; mul also takes operands of equal rank with any broadcasting). An expand repeats
values without arithmetic and shares its input's quantization, and expand_to_cat (which runs after this pass)
writes it as concatenations of copies: the op then reads the same numbers, so the result is the same in int8. The
expanded operand is the activation with more elements (fewer copies), never a constant; an expand whose counts
expand_to_cat cannot write leaves the op alone. Ethos-U targets broadcast both operands themselves. Runs before
quantization.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .expand_to_cat import expandable
from .fx_utils import call, rewrite_calls

aten = torch.ops.aten
_BINARY = (aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.maximum.default, aten.minimum.default)


def _shape(value) -> list[int] | None:
    val = value.meta.get("val") if isinstance(value, Node) else None
    return [int(d) for d in val.shape] if isinstance(val, torch.Tensor) and val.is_floating_point() else None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    a, b = node.args[:2]
    shapes, out = (_shape(a), _shape(b)), _shape(node)
    if None in shapes or out is None or node.kwargs or math.prod(out) in [math.prod(s) for s in shapes]:
        return None
    if node.target == aten.mul.Tensor and len(shapes[0]) == len(shapes[1]):
        return None  # Neutron multiplies operands of equal rank with any broadcasting
    order = sorted(((math.prod(s), i) for i, s in enumerate(shapes)), reverse=True)
    for _, i in order:
        operand = node.args[i]
        if operand.op != "get_attr" and expandable(shapes[i], out):
            args = list(node.args)
            args[i] = call(gm, aten.expand.default, (operand, out), node)
            return call(gm, node.target, tuple(args), node)
    return None


def broadcast_operand_to_expand(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, _BINARY, _rewrite)

"""ATen pass: an integer literal operand of float arithmetic (`x * 2`, `x + 1`, `1 - x`) becomes a float literal.

`to_edge` turns a scalar operand into a tensor; an integer one becomes an int64 tensor and a `_to_copy` to float,
which nothing quantizes, so the op and the copy stayed on the CPU. A float literal becomes a float tensor the
quantizer annotates like any constant operand. The value is the same: PyTorch promotes the integer to the float
tensor's dtype anyway. Only the literal operands of add / sub / rsub / mul on a float tensor change (not alpha,
not bools). Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import rewrite_calls

aten = torch.ops.aten

ARITHMETIC = (aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.rsub.Scalar,
              aten.rsub.Tensor, aten.mul.Tensor, aten.mul.Scalar)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or not val.is_floating_point():
        return None
    if not any(_is_int(a) for a in node.args[:2]):
        return None
    node.args = tuple(float(a) if i < 2 and _is_int(a) else a for i, a in enumerate(node.args))
    return node


def int_scalars_to_float(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, ARITHMETIC, _rewrite)

"""ATen pass: square(x) and pow(x, 2) -> x * x; pow(x, 3) -> (x * x) * x.

Neutron has no power kernel, but an int8 MUL of x by itself computes x * x from the int8 operands and requantizes
once: the same value PyTorch's quantized pow gives, within rounding. A cube is two MULs: the square in between gets
its own int8 quantization (PyTorch's quantized model computes exactly that rewritten graph). Larger or fractional
exponents are left alone (each further MUL adds a rounding; roots and reciprocals have no kernel). Runs before
quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten

#: the integer exponents written as products of x
EXPONENTS = (2, 3)


def _exponent(node) -> int | None:
    if node.target == aten.square.default:
        return 2
    if node.target == aten.pow.Tensor_Scalar and len(node.args) == 2:
        e = node.args[1]
        if isinstance(e, (int, float)) and not isinstance(e, bool) and float(e) in EXPONENTS:
            return int(e)
    return None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    e = _exponent(node)
    x = node.args[0] if node.args else None
    val = x.meta.get("val") if isinstance(x, Node) else None
    if e is None or val is None or not val.is_floating_point():
        return None
    out = call(gm, aten.mul.Tensor, (x, x), node)
    return call(gm, aten.mul.Tensor, (out, x), node) if e == 3 else out


def pow_to_mul(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.square.default, aten.pow.Tensor_Scalar), _rewrite)

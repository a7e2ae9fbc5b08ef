"""ATen pass: add(x, y, alpha=a) -> add(x, mul(y, a)), and likewise sub: PyTorch's scaled second operand written
as the multiplication by a constant it is, so both ops quantize and run on the NPU (an ADD / SUB with alpha has no
TFLite form). Runs before quantization, before int_scalars_to_float (an integer alpha becomes a float literal
there, as every integer operand of float arithmetic).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, y, alpha = arg(node, "self"), arg(node, "other"), arg(node, "alpha")
    if alpha in (1, None) or not isinstance(y, Node) or not isinstance(alpha, (int, float)):
        return None
    scaled = call(gm, aten.mul.Tensor, (y, alpha), node)
    return call(gm, node.target, (x, scaled), node)


def add_alpha_to_mul(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.add.Tensor, aten.sub.Tensor), _rewrite)

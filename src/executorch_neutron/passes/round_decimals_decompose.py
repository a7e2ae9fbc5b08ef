"""ATen pass: `round(x, decimals=d)` -> round(x * 10^d) / 10^d (d < 0: round(x / 10^-d) * 10^-d), as PyTorch
computes it, because `round.decimals` is outside the Core ATen opset (`to_edge` refuses it) while the
multiplication, round and division are Core ATen ops.

div_to_mul then makes the division by a constant a multiplication. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node:
    decimals, x = int(arg(node, "decimals")), node.args[0]
    scale, unscale = (aten.mul.Tensor, aten.div.Tensor) if decimals >= 0 else (aten.div.Tensor, aten.mul.Tensor)
    factor = float(10 ** abs(decimals))
    rounded = call(gm, aten.round.default, (call(gm, scale, (x, factor), node),), node)
    return call(gm, unscale, (rounded, factor), node)


def round_decimals_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.round.decimals, _rewrite)

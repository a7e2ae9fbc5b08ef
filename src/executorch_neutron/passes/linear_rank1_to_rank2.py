"""ATen pass: a `linear` of a rank-1 input (`nn.Linear` on one unbatched vector) -> unsqueeze(0), linear,
squeeze(0), because ExecuTorch's portable `linear.out` refuses a rank-1 input and the NPU's fully connected layer
has a rank-2 result: a batch of one vector is what both run.

Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    val = node.args[0].meta.get("val") if isinstance(node.args[0], Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() != 1:
        return None
    x2 = call(gm, aten.unsqueeze.default, (node.args[0], 0), node)
    y2 = call(gm, aten.linear.default, (x2, *node.args[1:]), node)
    return call(gm, aten.squeeze.dims, (y2, [0]), node)


def linear_rank1_to_rank2(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.linear.default, _rewrite)

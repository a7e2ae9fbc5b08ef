"""ATen pass: `adaptive_avg_pool1d(x, o)` -> `adaptive_avg_pool2d(unsqueeze(x, -2), [1, o])`, squeezed back,
because `to_edge` decomposes the 1-D pool after quantization into views nobody quantized (left on the CPU), while
the 2-D pool is one op the NPUs' adaptive average pool (or adaptive_pool_to_linear's fully connected layer) runs.

Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node:
    x2 = call(gm, aten.unsqueeze.default, (node.args[0], -2), node)
    pool = call(gm, aten.adaptive_avg_pool2d.default, (x2, [1, *list(node.args[1])]), node)
    return call(gm, aten.squeeze.dims, (pool, [-2]), node)


def adaptive_avg_pool1d_to_2d(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.adaptive_avg_pool1d.default, _rewrite)

"""ATen pass: threshold(x, t, v) with v == t -> clamp(x, min=t) (relu when t == 0).

threshold gives x where x > t and v elsewhere; when v equals t that is max(x, t), which the NPU's RELU (t = 0) or
MAXIMUM computes exactly. ExecuTorch would decompose threshold into a compare and a select after quantization, on
the CPU. Any other value v (a jump at t) has no int8 kernel and is left alone. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, t, v = node.args[:3]
    if float(t) != float(v):
        return None
    if float(t) == 0.0:
        return call(gm, aten.relu.default, (x,), node)
    return call(gm, aten.clamp.default, (x, float(t)), node)


def threshold_to_clamp(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.threshold.default, _rewrite)

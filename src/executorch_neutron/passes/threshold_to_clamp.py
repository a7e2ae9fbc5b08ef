"""ATen pass: threshold(x, t, v) with v == t -> clamp(x, min=t) (relu when t == 0).

threshold gives x where x > t and v elsewhere; when v equals t that is max(x, t), which the NPU's RELU (t = 0) or
MAXIMUM computes exactly. ExecuTorch would decompose threshold into a compare and a select after quantization, on
the CPU. Any other value v (a jump at t) has no int8 kernel and is left alone. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_utils import call, finish

aten = torch.ops.aten


def threshold_to_clamp(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.threshold.default:
            continue
        x, t, v = node.args[:3]
        if float(t) != float(v):
            continue
        with gm.graph.inserting_before(node):
            out = (call(gm, aten.relu.default, (x,), node) if float(t) == 0.0
                   else call(gm, aten.clamp.default, (x, float(t)), node))
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

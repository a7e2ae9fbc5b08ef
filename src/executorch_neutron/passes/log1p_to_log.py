"""ATen pass: log1p(x) -> log(x + 1).

Neither Neutron's operator tables nor NXP's SDK have LOG1P; LOG is in NXP's current SDK (and Vela's list). Written
out before annotation, the sum x + 1 gets its own int8 quantization (one rounding more than a LOG1P kernel would
make; PyTorch's quantized model computes exactly this graph) and LOG reads it. Runs before quantization; only
where the target's table runs log.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_utils import call, finish

aten = torch.ops.aten


def log1p_to_log(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.log1p.default:
            continue
        with gm.graph.inserting_before(node):
            shifted = call(gm, aten.add.Tensor, (node.args[0], 1.0), node)
            out = call(gm, aten.log.default, (shifted,), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

"""ATen pass: torch.matmul of two 3-D (or two 2-D) tensors -> aten.bmm (aten.mm).

`aten.matmul` is not a core ATen op: left alone it decomposes after quantization into expand/view/bmm/view with
no quantize node in between, so none of its pieces can be delegated. Rewritten before annotation it becomes one
int8 bmm (or mm) that Neutron runs. Other ranks and broadcasting matmuls are left alone.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_utils import call, finish

aten = torch.ops.aten


def _shape(node):
    val = node.meta.get("val") if hasattr(node, "meta") else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def matmul_to_bmm(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.matmul.default:
            continue
        a, b = node.args[0], node.args[1]
        sa, sb = _shape(a), _shape(b)
        if sa is None or sb is None or len(sa) != len(sb):
            continue
        if len(sa) == 3 and sa[0] == sb[0]:
            target = aten.bmm.default
        elif len(sa) == 2:
            target = aten.mm.default
        else:
            continue
        with gm.graph.inserting_before(node):
            out = call(gm, target, (a, b), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

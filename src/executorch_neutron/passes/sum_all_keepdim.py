"""ATen pass: a sum over every dim to a 0-d scalar (`x.sum()`) -> sum over every dim with keepdim, then a reshape
to the scalar.

A 0-d tensor cannot be a Neutron partition's boundary (partition/support.py), so `x.sum()` would stay on the CPU;
NXP's release delegates it (its SumPattern quantizes aten.sum.default). With keepdim the sum runs on the NPU with a
(1, ..., 1) output and only the reshape to () is left on the CPU (a view: no computation). Runs before quantization
(NeutronQuantizer.transform_for_annotation); the reshape is annotated like any other view.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, finish

aten = torch.ops.aten


def _full_sum_input(node: Node) -> Node | None:
    """The input of a float sum to a 0-d value of a tensor of rank >= 1, else None."""
    if node.op != "call_function" or node.target != aten.sum.default or len(node.args) != 1 or node.kwargs:
        return None
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    ok = isinstance(val, torch.Tensor) and val.dim() >= 1 and val.is_floating_point()
    return x if ok else None


def sum_all_keepdim(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        x = _full_sum_input(node)
        if x is None:
            continue
        with gm.graph.inserting_before(node):
            total = call(gm, aten.sum.dim_IntList, (x, list(range(x.meta["val"].dim())), True), node)
            out = call(gm, aten.reshape.default, (total, []), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

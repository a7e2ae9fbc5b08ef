"""ATen pass: the regions a model runs under `torch.autocast` are inlined into the graph.

`torch.export` turns `with torch.autocast(...)` into a `wrap_with_autocast` call of a nested graph (EfficientViT's
linear attention disables autocast around its matmuls). The quantizer's annotation and every other pass see only
the outer graph, so the region's ops stayed unquantized and ran on the CPU in float. Inlined, they are ordinary
ops. Autocast only selects float precisions, which int8 quantization replaces anyway. Runs first.
"""

from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node

from .fx_utils import finish

_AUTOCAST = getattr(torch.ops.higher_order, "wrap_with_autocast", None)


def _inline(gm: GraphModule, node: Node) -> None:
    sub_node, operands = node.args[4], node.args[5:]
    sub = getattr(gm, sub_node.target)
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    val_map = dict(zip(placeholders, operands))
    for attr in (n for n in sub.graph.nodes if n.op == "get_attr"):
        name = f"{sub_node.target}_{attr.target.replace('.', '_')}"
        value = sub
        for part in attr.target.split("."):
            value = getattr(value, part)
        setattr(gm, name, value)
        with gm.graph.inserting_before(node):
            val_map[attr] = gm.graph.get_attr(name)
            val_map[attr].meta.update(attr.meta)
    with gm.graph.inserting_before(node):
        outs = gm.graph.graph_copy(sub.graph, val_map)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    for user in list(node.users):
        if user.target is not operator.getitem:
            raise NotImplementedError(f"autocast region {node.name} is read by {user.target}, not by getitem")
        user.replace_all_uses_with(outs[user.args[1]])
        gm.graph.erase_node(user)
    gm.graph.erase_node(node)
    if not sub_node.users:
        gm.graph.erase_node(sub_node)


def _regions(gm: GraphModule) -> list[Node]:
    return [n for n in gm.graph.nodes if _AUTOCAST is not None and n.op == "call_function" and n.target is _AUTOCAST]


def inline_autocast(gm: GraphModule) -> GraphModule:
    """Inline every autocast region, nested ones too (an inlined region may hold another)."""
    found = False
    while regions := _regions(gm):
        found = True
        for node in regions:
            _inline(gm, node)
    return finish(gm) if found else gm

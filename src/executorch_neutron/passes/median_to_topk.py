"""ATen pass: `median` / `median.dim` -> the smallest (n+1)//2 values by `topk(largest=False)` and the last of them
(the lower median, as PyTorch returns it), with its index, because `median` is outside the Core ATen opset
(`to_edge` refuses it) while topk, slice, reshape and squeeze are Core ATen ops.

`median.dim` returns values and indices (read through getitem), so the pass rewrites its readers itself rather
than through `fx_utils.rewrite_calls`. Runs before quantization.
"""

from __future__ import annotations

import math
import operator

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, finish

aten = torch.ops.aten
MEDIANS = (aten.median.default, aten.median.dim)


def _median_all(gm: GraphModule, node: Node, shape: list[int]) -> None:
    """median(x) of every element: the ((n+1)//2)-th smallest of x flattened, as a 0-d tensor."""
    k = (math.prod(shape) + 1) // 2
    flat = call(gm, aten.reshape.default, (node.args[0], [-1]), node)
    smallest = call(gm, operator.getitem, (call(gm, aten.topk.default, (flat, k, 0, False, True), node), 0), node)
    median = call(gm, aten.reshape.default, (call(gm, aten.slice.Tensor, (smallest, 0, k - 1, k), node), []), node)
    node.replace_all_uses_with(median)
    gm.graph.erase_node(node)


def _median_dim(gm: GraphModule, node: Node, shape: list[int]) -> None:
    """median(x, dim, keepdim): values and indices, each the last of topk's smallest (n+1)//2 along dim."""
    dim = int(arg(node, "dim")) % max(len(shape), 1)
    keepdim = bool(arg(node, "keepdim"))
    k = (shape[dim] + 1) // 2
    top = call(gm, aten.topk.default, (node.args[0], k, dim, False, True), node)
    for i in (0, 1):
        last = call(gm, aten.slice.Tensor, (call(gm, operator.getitem, (top, i), node), dim, k - 1, k), node)
        new = last if keepdim else call(gm, aten.squeeze.dims, (last, [dim]), node)
        for item in [u for u in node.users if u.target is operator.getitem and int(u.args[1]) == i]:
            item.replace_all_uses_with(new)
            gm.graph.erase_node(item)
    if not node.users:
        gm.graph.erase_node(node)


def median_to_topk(gm: GraphModule) -> GraphModule:
    changed = False
    for node in [n for n in gm.graph.nodes if n.op == "call_function" and n.target in MEDIANS]:
        val = node.args[0].meta.get("val") if isinstance(node.args[0], Node) else None
        if not isinstance(val, torch.Tensor):
            continue
        with gm.graph.inserting_before(node):
            (_median_all if node.target == aten.median.default else _median_dim)(gm, node, list(val.shape))
        changed = True
    return finish(gm) if changed else gm

"""ATen pass: split / split_with_sizes / chunk -> one slice per used output; select / unbind -> slice + reshape.

Each `getitem(split(x), i)` becomes `slice(x, dim, start, end)`: Neutron runs slices (int8, shared quantization)
and the slices of unused outputs simply disappear. `select(x, dim, i)` (`qkv[0]`, and each output of `unbind`,
attention's q, k, v) is the slice [i, i+1) reshaped without that dim; above rank 4 the slice is taken on x viewed
as [before, size, after]. Runs before quantization.
"""

from __future__ import annotations

import math
import operator

import torch
from torch.fx import GraphModule

from .fx_utils import arg, call, finish

aten = torch.ops.aten
_SPLITS = (aten.split.Tensor, aten.split_with_sizes.default, aten.chunk.default,
           aten.split_with_sizes_copy.default, aten.split_copy.Tensor)


def _sizes(node, length: int) -> list[int] | None:
    if node.target in (aten.split_with_sizes.default, aten.split_with_sizes_copy.default):
        return [int(s) for s in arg(node, "split_sizes")]
    if node.target == aten.chunk.default:
        chunks = int(arg(node, "chunks"))
        size = -(-length // chunks)
    else:
        size = int(arg(node, "split_size"))
    if size <= 0:
        return None
    return [min(size, length - start) for start in range(0, length, size)]


def _select(gm, x, dim: int, index: int, like) -> torch.fx.Node:
    """x[..., index, ...] along `dim` as slice + reshape (inserted before the current point)."""
    shape = list(x.meta["val"].shape)
    dim, out = dim % len(shape), shape[:dim % len(shape)] + shape[dim % len(shape) + 1:]
    index = index % shape[dim]
    if len(shape) > 4:
        x = call(gm, aten.reshape.default, (x, [math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])]), like)
        dim = 1
    piece = call(gm, aten.slice.Tensor, (x, dim, index, index + 1), like)
    return call(gm, aten.reshape.default, (piece, out), like)


def _selects(gm: GraphModule) -> None:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in (aten.select.int, aten.unbind.int):
            continue
        x = node.args[0]
        if not isinstance(x, torch.fx.Node) or x.meta.get("val") is None:
            continue
        if node.target == aten.select.int:
            with gm.graph.inserting_before(node):
                out = _select(gm, x, int(arg(node, "dim")), int(arg(node, "index")), node)
            node.replace_all_uses_with(out)
            gm.graph.erase_node(node)
            continue
        if not all(u.target is operator.getitem for u in node.users):
            continue
        for user in list(node.users):
            with gm.graph.inserting_before(user):
                out = _select(gm, x, int(arg(node, "dim")), int(user.args[1]), user)
            user.replace_all_uses_with(out)
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)


def split_to_slices(gm: GraphModule) -> GraphModule:
    _selects(gm)
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _SPLITS:
            continue
        if not all(u.target is operator.getitem for u in node.users):
            continue
        x = arg(node, "self")
        val = x.meta.get("val")
        if val is None:
            continue
        dim = int(arg(node, "dim")) % val.dim()
        sizes = _sizes(node, int(val.shape[dim]))
        if sizes is None:
            continue
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        for user in list(node.users):
            i = user.args[1]
            with gm.graph.inserting_before(user):
                piece = call(gm, aten.slice.Tensor, (x, dim, starts[i], starts[i] + sizes[i]), user)
            user.replace_all_uses_with(piece)
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)
    return finish(gm)

"""ATen pass: picking along one dim by constant positions -> slices (and a concatenation of them).

`x.narrow(d, start, n)` is a slice; `x[:, [0, 2]]` (aten.index.Tensor) and `torch.index_select(x, d, idx)` with a
constant index are the slices of each run of consecutive positions, concatenated along d. Neither NPU has a gather,
but both run slices and concatenations, which move int8 values without computing (the concatenation shares its
inputs' qparams), so the result is exact. An index computed at run time, several indexed dims, or more runs than
`ops.limits.EXPAND_CAT_INPUTS` stay as they are. Runs before quantization, after fold_constants (which makes a
constant index a get_attr).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..ops.limits import EXPAND_CAT_INPUTS
from .fx_utils import call, constant, rewrite_calls

aten = torch.ops.aten


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """[(start, end)] of each run of consecutive positions, in order."""
    runs: list[tuple[int, int]] = []
    for p in positions:
        if runs and runs[-1][1] == p:
            runs[-1] = (runs[-1][0], p + 1)
        else:
            runs.append((p, p + 1))
    return runs


def _picked(gm: GraphModule, node: Node) -> tuple[int, list[int]] | None:
    """(dim, positions) of a constant pick along one dim, else None."""
    if node.target == aten.index.Tensor:
        indices = node.args[1]
        used = [(d, i) for d, i in enumerate(indices) if i is not None]
        if len(used) != 1:
            return None
        dim, index = used[0]
    else:
        dim, index = node.args[1], node.args[2]
    value = constant(gm, index)
    if value is None or value.dim() != 1 or value.dtype not in (torch.int64, torch.int32) or value.numel() == 0:
        return None
    size = node.args[0].meta["val"].shape[dim]
    return dim, [int(p) % size for p in value.tolist()]


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, val = node.args[0], node.args[0].meta.get("val") if isinstance(node.args[0], Node) else None
    if not isinstance(val, torch.Tensor) or not val.is_floating_point() or x.op == "get_attr":
        return None
    if node.target == aten.narrow.default:
        dim, start, length = node.args[1], node.args[2], node.args[3]
        return call(gm, aten.slice.Tensor, (x, dim, start, start + length), node)
    picked = _picked(gm, node)
    if picked is None:
        return None
    dim, positions = picked
    runs = _runs(positions)
    if len(runs) > EXPAND_CAT_INPUTS:
        return None
    parts = [call(gm, aten.slice.Tensor, (x, dim, a, b), node) for a, b in runs]
    return parts[0] if len(parts) == 1 else call(gm, aten.cat.default, (parts, dim), node)


def gather_to_slices(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.narrow.default, aten.index.Tensor, aten.index_select.default), _rewrite)

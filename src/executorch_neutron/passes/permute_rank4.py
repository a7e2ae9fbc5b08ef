"""ATen pass: permutations of rank > 4 become rank-4 permutations between reshapes; chained reshapes collapse.

Neutron transposes tensors of rank <= 4. A permutation that keeps runs of adjacent dimensions together only
moves those runs: each run becomes one dimension, so `permute(x, p)` is `reshape(permute(reshape(x, runs),
q), out)`. Channel shuffle (ShuffleNet: view (N, G, C/G, H, W) -> transpose(1, 2) -> view (N, C, H, W)) becomes
view (N, G, C/G, H*W) -> permute (0, 2, 1, 3) -> contiguous copy -> view (N, C, H, W): rank 4, batch first,
delegated (the copy is a no-op on the NPU).
A reshape of a reshape is one reshape of the first input, and a reshape to the input's own shape is dropped,
so the 5D intermediates vanish. Runs before quantization (after no-op removal).
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule

from .fx_utils import arg, call, finish

aten = torch.ops.aten
_RESHAPES = (aten.view.default, aten.reshape.default, aten._unsafe_view.default)
_PERMUTES = (aten.permute.default, aten.transpose.int)


def _perm(node, rank: int) -> list[int]:
    if node.target == aten.transpose.int:
        p = list(range(rank))
        a, b = int(arg(node, "dim0")) % rank, int(arg(node, "dim1")) % rank
        p[a], p[b] = p[b], p[a]
        return p
    return [int(d) % rank for d in arg(node, "dims")]


def merged(shape: list[int], perm: list[int]) -> tuple[list[int], list[int]]:
    """(shape, perm) with every run of input dims that stays adjacent and in order under `perm` merged into one
    dim."""
    runs: list[list[int]] = []
    for d in perm:
        if runs and (d == runs[-1][-1] + 1):
            runs[-1].append(d)
        else:
            runs.append([d])
    by_input = sorted(range(len(runs)), key=lambda i: runs[i][0])
    new_shape = [math.prod(shape[d] for d in runs[i]) for i in by_input]
    position = {run: k for k, run in enumerate(by_input)}
    return new_shape, [position[i] for i in range(len(runs))]


def permute_rank4(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _PERMUTES:
            continue
        x = node.args[0]
        val, out = x.meta.get("val"), node.meta.get("val")
        if val is None or out is None or val.dim() <= 4:
            continue
        shape = list(val.shape)
        new_shape, new_perm = merged(shape, _perm(node, len(shape)))
        if len(new_shape) > 4:
            continue
        with gm.graph.inserting_before(node):
            r = call(gm, aten.reshape.default, (x, new_shape), node)
            p = call(gm, aten.permute.default, (r, new_perm), node)
            # a contiguous copy (annotated like the permute): otherwise export splits the reshape of the permuted
            # (strided) tensor into clone + view after quantization, with no quantize node between them
            c = call(gm, aten.clone.default, (p,), node)
            c.kwargs = {"memory_format": torch.contiguous_format}
            back = call(gm, aten.reshape.default, (c, list(out.shape)), node)
        node.replace_all_uses_with(back)
        gm.graph.erase_node(node)
    _collapse_reshapes(gm)
    return finish(gm)


def _collapse_reshapes(gm: GraphModule) -> None:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _RESHAPES:
            continue
        src = node.args[0]
        while getattr(src, "op", None) == "call_function" and src.target in _RESHAPES:
            src = src.args[0]
        if src is not node.args[0]:
            node.target = aten.reshape.default
            node.args = (src, *node.args[1:])
        sv, ov = src.meta.get("val"), node.meta.get("val")
        if (sv is not None and ov is not None and tuple(sv.shape) == tuple(ov.shape)
                and not (src.op == "placeholder" and any(u.op == "output" for u in node.users))):
            node.replace_all_uses_with(src)
            gm.graph.erase_node(node)

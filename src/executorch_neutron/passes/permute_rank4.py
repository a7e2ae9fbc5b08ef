"""ATen pass: permutations Neutron cannot run as they are become ones it can, between reshapes; chained reshapes
collapse.

Neutron transposes tensors of rank <= 4 with the batch dimension first (unless it is 1). A permutation only moves
data along its dims of size > 1, and a run of adjacent dimensions that stays together and in order moves as one:
dropping size-1 dims and merging each run gives the smallest equivalent permutation, so `permute(x, p)` is
`reshape(permute(reshape(x, runs), q), out)`; a leading dim of 1 is added when the batch dimension would move.
A permutation that only moves size-1 dims is a reshape. Channel shuffle (ShuffleNet: view (N, G, C/G, H, W) ->
transpose(1, 2) -> view (N, C, H, W)) becomes view (G, C/G, H*W) -> permute -> contiguous copy -> view: delegated
(the copy is a no-op on the NPU); attention's head split ([B, T, 3, heads, D] -> [3, B, heads, T, D]) and
nn.MultiheadAttention's transposes of a batch of tokens become rank-4 batch-first transposes. A permutation with
no such form (the head split of a batch of token groups, [B, T, 3, heads, D] -> [3, B, heads, T, D]) becomes two
that have one.
A reshape of a reshape is one reshape of the first input, and a reshape to the input's own shape is dropped,
so the 5D intermediates vanish. Runs before quantization (after no-op removal)."""

from __future__ import annotations

import itertools
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


def canonical(shape: list[int], perm: list[int]) -> tuple[list[int], list[int]]:
    """The smallest permutation moving the same data: size-1 dims dropped, adjacent runs merged (`merged`)."""
    keep = [d for d in range(len(shape)) if shape[d] != 1]
    position = {d: i for i, d in enumerate(keep)}
    return merged([shape[d] for d in keep], [position[d] for d in perm if shape[d] != 1])


def accepted(shape: list[int], perm: list[int]) -> bool:
    """Whether Neutron transposes it as it is: rank <= 4, batch first unless it is 1 (ops/shape.py's check)."""
    return len(shape) <= 4 and not (len(shape) >= 3 and perm[0] != 0 and shape[0] != 1)


def _runnable(shape: list[int], perm: list[int]) -> tuple[list[int], list[int]] | None:
    """The (shape, perm) Neutron runs for this permutation (canonical, a leading 1 when the batch would move), or
    None when there is none."""
    new_shape, new_perm = canonical(shape, perm)
    if len(new_shape) < 4 and new_perm and new_perm[0] != 0:  # a leading batch of 1 keeps the batch dim first
        new_shape, new_perm = [1, *new_shape], [0, *(p + 1 for p in new_perm)]
    return (new_shape, new_perm) if accepted(new_shape, new_perm) else None


def _two_steps(shape: list[int], perm: list[int]) -> tuple[list[int], list[int]] | None:
    """(q, r) with permute(permute(x, q), r) == permute(x, perm) and both runnable (e.g. attention's head split
    [B, T, 3, heads, D] -> [3, B, heads, T, D] with B > 1: first [B, 3, heads, T, D], then the 3 in front); the
    first such q in lexicographic order."""
    for q in itertools.permutations(range(len(shape))):
        r = [q.index(d) for d in perm]
        if _runnable(shape, list(q)) and _runnable([shape[d] for d in q], r):
            return list(q), r
    return None


def _emit(gm: GraphModule, x, shape: list[int], perm: list[int], node):
    """permute(x, perm) as reshape -> runnable permute -> contiguous copy -> reshape (inserted before `node`)."""
    new_shape, new_perm = _runnable(shape, perm)
    out_shape = [shape[d] for d in perm]
    r = call(gm, aten.reshape.default, (x, new_shape), node)
    p = call(gm, aten.permute.default, (r, new_perm), node)
    c = call(gm, aten.clone.default, (p,), node)  # a contiguous copy: see _copy_before_reshapes
    c.kwargs = {"memory_format": torch.contiguous_format}
    return call(gm, aten.reshape.default, (c, out_shape), node)


def permute_rank4(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _PERMUTES:
            continue
        x = node.args[0]
        val, out = x.meta.get("val"), node.meta.get("val")
        if val is None or out is None:
            continue
        shape = list(val.shape)
        perm = _perm(node, len(shape))
        new_shape, new_perm = canonical(shape, perm)
        if new_perm == sorted(new_perm):  # only size-1 dims move: a reshape
            with gm.graph.inserting_before(node):
                back = call(gm, aten.reshape.default, (x, list(out.shape)), node)
        elif accepted(shape, perm):
            _copy_before_reshapes(gm, node)
            continue
        elif _runnable(shape, perm):
            with gm.graph.inserting_before(node):
                back = _emit(gm, x, shape, perm, node)
        else:
            steps = _two_steps(shape, perm) if len(shape) <= 6 else None
            if steps is None:
                continue
            q, r = steps
            with gm.graph.inserting_before(node):
                back = _emit(gm, _emit(gm, x, shape, q, node), [shape[d] for d in q], r, node)
        node.replace_all_uses_with(back)
        gm.graph.erase_node(node)
    _collapse_reshapes(gm)
    return finish(gm)


def _copy_before_reshapes(gm: GraphModule, node) -> None:
    """A contiguous copy between a permutation and the reshapes that read it (annotated like the permute):
    otherwise export splits each reshape of the permuted (strided) tensor into clone + view after quantization,
    with no quantize node between them."""
    readers = [u for u in node.users if u.op == "call_function" and u.target in _RESHAPES]
    if not readers:
        return
    with gm.graph.inserting_after(node):
        c = call(gm, aten.clone.default, (node,), node)
        c.kwargs = {"memory_format": torch.contiguous_format}
    for u in readers:
        u.replace_input_with(node, c)


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

"""ATen pass: expand(x, sizes) (and expand_as) of a float activation -> x reshaped to the result's rank, then a
concatenation of copies along each expanded (size-1) dim; repeat / tile the same along each repeated dim (a
concatenation of copies tiles); repeat_interleave(x, r, dim) -> copies concatenated along a new dim after `dim`,
merged into it.

Neither Neutron's operator table nor our converter has a broadcast copy (TILE / BROADCAST_TO), but a
concatenation of one tensor with itself repeats it, with shared quantization, so the copy is exact in int8. A
repeat count is split into factors (512 copies: three concatenations of 8), so no concatenation takes more than
`ops.limits.EXPAND_CAT_INPUTS` inputs; a count with a larger prime factor is left alone (expand stays on the CPU).
Expands of constants are folded before (fold_constants) or stay constants. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..ops.limits import EXPAND_CAT_INPUTS
from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _factors(n: int) -> list[int] | None:
    """n as a product of factors <= EXPAND_CAT_INPUTS, largest first; None when a prime factor is larger."""
    out = []
    while n > 1:
        f = next((f for f in range(EXPAND_CAT_INPUTS, 1, -1) if n % f == 0), None)
        if f is None:
            return None
        out.append(f)
        n //= f
    return out


def _split(reps) -> list[tuple[int, list[int]]] | None:
    """[(dim, factors of its count)] for each count above 1; None when a count has a prime factor too large."""
    out = []
    for dim, r in enumerate(reps):
        if r != 1:
            factors = _factors(int(r))
            if factors is None:
                return None
            out.append((dim, factors))
    return out


def expandable(shape, out_shape) -> bool:
    """Whether this pass writes an expand of a `shape` activation to `out_shape` as concatenations (no count with a
    prime factor above EXPAND_CAT_INPUTS)."""
    shape = [1] * (len(out_shape) - len(shape)) + list(shape)
    return _split([int(w) if h != w else 1 for h, w in zip(shape, out_shape)]) is not None


def _plan(node: Node) -> tuple[list[int], list[tuple[int, list[int]]]] | None:
    """(the input viewed at the result's rank, [(dim, factors)] of the copies), or None when not rewritten."""
    x, out = node.args[0], node.meta.get("val")
    if not isinstance(x, Node):
        return None
    val = x.meta.get("val")
    if x.op == "get_attr" or not (isinstance(val, torch.Tensor) and val.is_floating_point()
                                  and isinstance(out, torch.Tensor)):
        return None  # a constant (a class token) is folded or stays a constant
    if node.users and all(u.target == aten.div.Tensor and u.args[1] is node for u in node.users):
        return None  # a divisor computed at run time: the division stays a float CPU op, so does its expand
    shape = [1] * (out.dim() - val.dim()) + list(val.shape)
    if node.target in (aten.repeat.default, aten.tile.default):
        reps = [int(r) for r in node.args[1]]
        reps = [1] * (len(shape) - len(reps)) + reps  # tile pads its counts on the left
    else:
        reps = [int(w) if h != w else 1 for h, w in zip(shape, out.shape)]
    repeats = _split(reps)
    return None if repeats is None else (shape, repeats)


def _copies(gm: GraphModule, y: Node, repeats, like: Node) -> Node:
    for dim, factors in repeats:
        for f in factors:
            y = call(gm, aten.cat.default, ([y] * f, dim), like)
    return y


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    if node.target == aten.repeat_interleave.self_int:
        return _interleave(gm, node)
    plan = _plan(node)
    if plan is None:
        return None
    shape, repeats = plan
    y = node.args[0]
    if list(y.meta["val"].shape) != shape:
        y = call(gm, aten.reshape.default, (y, shape), node)
    return _copies(gm, y, repeats, node)


def _interleave(gm: GraphModule, node: Node) -> Node | None:
    """repeat_interleave(x, r, dim): each element r times in a row along dim = r copies along a new dim after it."""
    x, r = node.args[0], node.args[1]
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim")
    val, out = (x.meta.get("val") if isinstance(x, Node) else None), node.meta.get("val")
    if (not isinstance(r, int) or dim is None or x.op == "get_attr" or not isinstance(val, torch.Tensor)
            or not val.is_floating_point() or not isinstance(out, torch.Tensor)):
        return None
    dim = dim % val.dim()
    repeats = _split([1] * (dim + 1) + [r])
    if repeats is None:
        return None
    y = call(gm, aten.unsqueeze.default, (x, dim + 1), node)
    return call(gm, aten.reshape.default, (_copies(gm, y, repeats, node), list(out.shape)), node)


def expand_to_cat(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.expand.default, aten.expand_as.default, aten.repeat.default, aten.tile.default,
                              aten.repeat_interleave.self_int), _rewrite)

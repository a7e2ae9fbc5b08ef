"""ATen pass: expand(x, sizes) of a float activation -> x reshaped to the result's rank, then a concatenation of
copies along each expanded (size-1) dim.

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


def _plan(node: Node) -> tuple[list[int], list[tuple[int, list[int]]]] | None:
    """(the input viewed at the result's rank, [(dim, factors)] of the repeats), or None when not rewritten."""
    x, out = node.args[0], node.meta.get("val")
    if not isinstance(x, Node):
        return None
    val = x.meta.get("val")
    if x.op == "get_attr" or not (isinstance(val, torch.Tensor) and val.is_floating_point()
                                  and isinstance(out, torch.Tensor)):
        return None  # a constant (a class token) is folded or stays a constant
    shape = [1] * (out.dim() - val.dim()) + list(val.shape)
    repeats = []
    for dim, (have, want) in enumerate(zip(shape, out.shape)):
        if have != want:
            factors = _factors(int(want))
            if factors is None:
                return None
            repeats.append((dim, factors))
    return shape, repeats


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    plan = _plan(node)
    if plan is None:
        return None
    shape, repeats = plan
    y = node.args[0]
    if list(y.meta["val"].shape) != shape:
        y = call(gm, aten.reshape.default, (y, shape), node)
    for dim, factors in repeats:
        for f in factors:
            y = call(gm, aten.cat.default, ([y] * f, dim), node)
    return y


def expand_to_cat(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.expand.default, _rewrite)

"""ATen pass (Ethos-U targets): a max pool whose windows tile its input (kernel == stride, no padding, no
dilation) with a stride above 3 becomes a chain of such pools with strides 2 and 3 whose product is the stride.

Vela runs max pools with strides 1..3 only (its `stride_range`), and a global or adaptive max pool (kernel =
stride = input / output, as adaptive_max_pool_decompose writes it) often has a larger one: 20 x 20 -> 5 x 5 is stride 4.
The max over a tile is the max over the maxima of its sub-tiles, so the chain computes exactly the same int8
values (max pools do not requantize). What a stride has left after its 2s and 3s (5, 7, ...) is a max over runs of
that many elements: the runs become one axis of a one-image view ([1, N*C*H*W/p, 1, p] for W), pooled by a window
as long as that axis with stride 1, and viewed back; a remainder the pool would drop is sliced off first. Neutron
runs such strides in one pool, so the pipeline applies this to Ethos-U targets only.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..ops.args import pool_args
from .fx_utils import call, rewrite_calls

aten = torch.ops.aten
MAX_STRIDE = 3  # Vela's max-pool stride range is [1, 3] (ethosu.vela TFLiteSupportedOperators.stride_range)


def _factors(n: int) -> tuple[list[int], int]:
    """n as 2s and 3s (largest first) times the rest: the product of its prime factors above 3."""
    out = []
    for f in (3, 2):
        while n % f == 0:
            out.append(f)
            n //= f
    return out, n


def _shape(node: Node) -> list[int] | None:
    val = node.meta.get("val")
    return [int(d) for d in val.shape] if isinstance(val, torch.Tensor) and val.dim() == 4 else None


def _group_max(gm: GraphModule, x: Node, axis: int, p: int, like: Node) -> Node | None:
    """The max over each run of p elements along `axis` (2: H, 3: W) of [N, C, H, W], dropping a remainder: the
    runs laid out as one p-long axis of a one-image view, pooled by a window covering it (stride 1, as Vela wants;
    the output is 1 long there), viewed back."""
    shape = _shape(x)
    if shape is None:
        return None
    n, c, h, w = shape
    size = (h, w)[axis - 2]
    if size // p == 0:
        return None
    if size % p:
        x = call(gm, aten.slice.Tensor, (x, axis, 0, size // p * p), like)
        h, w = (size // p * p, w) if axis == 2 else (h, size // p * p)
    if axis == 3:
        view, kernel, back = [1, n * c * h * (w // p), 1, p], [1, p], [n, c, h, w // p]
    else:
        view, kernel, back = [1, n * c * (h // p), p, w], [p, 1], [n, c, h // p, w]
    x = call(gm, aten.reshape.default, (x, view), like)  # (a sliced input is not contiguous)
    x = call(gm, aten.max_pool2d.default, (x, kernel, [1, 1]), like)
    return call(gm, aten.reshape.default, (x, back), like)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    pool = pool_args(node)
    tiles = pool.kernel == pool.stride and not any(pool.padding) and pool.dilation == [1, 1] and not pool.ceil_mode
    if node.kwargs or not tiles or max(pool.stride) <= MAX_STRIDE or _shape(node.args[0]) is None:
        return None
    (fh, rest_h), (fw, rest_w) = (_factors(s) for s in pool.stride)
    steps = max(len(fh), len(fw))
    x = node.args[0]
    for h, w in zip(fh + [1] * (steps - len(fh)), fw + [1] * (steps - len(fw))):
        x = call(gm, aten.max_pool2d.default, (x, [h, w], [h, w]), node)
    for axis, p in ((2, rest_h), (3, rest_w)):
        if p > 1:
            x = _group_max(gm, x, axis, p, node)
            if x is None:
                return None
    return x


def max_pool_split(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.max_pool2d.default, _rewrite)

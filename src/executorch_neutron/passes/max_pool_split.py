"""ATen pass (Ethos-U targets): a max pool whose windows tile its input (kernel == stride, no padding, no
dilation) with a stride above 3 becomes a chain of such pools with strides 2 and 3 whose product is the stride.

Vela runs max pools with strides 1..3 only (its `stride_range`), and a global or adaptive max pool (kernel =
stride = input / output, as core_aten_rewrites writes it) often has a larger one: 20 x 20 -> 5 x 5 is stride 4.
The max over a tile is the max over the maxima of its sub-tiles, so the chain computes exactly the same int8
values (max pools do not requantize). A stride with a prime factor above 3 stays as it is (and on the CPU with
Vela's reason). Neutron runs such strides in one pool, so the pipeline applies this to Ethos-U targets only.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..ops.args import pool_args
from .fx_utils import call, rewrite_calls

aten = torch.ops.aten
MAX_STRIDE = 3  # Vela's max-pool stride range is [1, 3] (ethosu.vela TFLiteSupportedOperators.stride_range)


def _factors(n: int) -> list[int] | None:
    """n as a product of 2s and 3s, largest first (None when n has another prime factor)."""
    out = []
    for f in (3, 2):
        while n % f == 0:
            out.append(f)
            n //= f
    return out if n == 1 else None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    pool = pool_args(node)
    tiles = pool.kernel == pool.stride and not any(pool.padding) and pool.dilation == [1, 1] and not pool.ceil_mode
    if node.kwargs or not tiles or max(pool.stride) <= MAX_STRIDE:
        return None
    fh, fw = (_factors(s) for s in pool.stride)
    if fh is None or fw is None:
        return None
    steps = max(len(fh), len(fw))
    x = node.args[0]
    for h, w in zip(fh + [1] * (steps - len(fh)), fw + [1] * (steps - len(fw))):
        x = call(gm, aten.max_pool2d.default, (x, [h, w], [h, w]), node)
    return x


def max_pool_split(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.max_pool2d.default, _rewrite)

"""ATen pass: a dilated max_pool2d (no padding, no ceil_mode) -> the maximum of its kernel taps' shifted slices,
then a 1x1 max_pool2d with the pool's stride (a subsampling).

TFLite's MAX_POOL_2D has no dilation. Output position i of a pool with kernel k, dilation d and stride s is
max_j x[i * s + j * d]: taking for each tap j the slice x[j * d : j * d + (out - 1) * s + 1] (contiguous),
their elementwise maximum and then every s-th element gives exactly that (subsampling commutes with an
elementwise maximum). Slices, MAXIMUM and the pool share one quantization, so the result equals PyTorch's. Runs
before quantization, after pool1d_to_pool2d (a dilated max_pool1d is a max_pool2d by then); only where the
target's table has MAXIMUM.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..ops.args import pool_args
from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    pool = pool_args(node)
    k, s, d = pool.kernel, pool.stride, pool.dilation
    if val is None or val.dim() != 4 or d == [1, 1] or any(pool.padding) or pool.ceil_mode:
        return None
    out = [(int(val.shape[2 + i]) - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if min(out) < 1:
        return None
    taps = []
    for jh in range(k[0]):
        rows = call(gm, aten.slice.Tensor, (x, 2, jh * d[0], jh * d[0] + (out[0] - 1) * s[0] + 1), node)
        for jw in range(k[1]):
            start = jw * d[1]
            taps.append(call(gm, aten.slice.Tensor, (rows, 3, start, start + (out[1] - 1) * s[1] + 1), node))
    m = taps[0]
    for t in taps[1:]:
        m = call(gm, aten.maximum.default, (m, t), node)
    return m if s == [1, 1] else call(gm, aten.max_pool2d.default, (m, [1, 1], s, [0, 0], [1, 1], False), node)


def dilated_max_pool(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.max_pool2d.default, _rewrite)

"""ATen pass: max_pool1d / avg_pool1d -> unsqueeze(2), max_pool2d / avg_pool2d over a 1 x L image, squeeze(2);
and a 2D pool (max, average, adaptive average) of an unbatched (C, H, W) input -> unsqueeze(0), the pool on
(1, C, H, W), squeeze(0), so the pool converter sees the rank-4 input it needs.

Without it, ExecuTorch decomposes 1D pools after quantization and the inserted views have no int8 annotation.
Runs before quantization (NeutronQuantizer.transform_for_annotation).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..ops.args import pool_args
from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten

POOL2D = (aten.max_pool2d.default, aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default)
POOL1D = (aten.max_pool1d.default, aten.avg_pool1d.default)


def _batch_unbatched_pool2d(gm: GraphModule, node: Node) -> Node | None:
    """pool2d(x) of a rank-3 x -> squeeze(pool2d(unsqueeze(x, 0)), [0]), the other arguments unchanged."""
    val = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
    if val is None or val.dim() != 3 or node.kwargs:
        return None
    x4 = call(gm, aten.unsqueeze.default, (node.args[0], 0), node)
    pool = call(gm, node.target, (x4, *node.args[1:]), node)
    return call(gm, aten.squeeze.dims, (pool, [0]), node)


def _pool1d(gm: GraphModule, node: Node) -> Node | None:
    """pool1d(x) -> squeeze(pool2d(unsqueeze(x, 2)), [2]) with a 1 x k window."""
    x = arg(node, "self")
    val = x.meta.get("val") if hasattr(x, "meta") else None
    if val is None or val.dim() != 3:
        return None
    pool = pool_args(node)
    (k,), (s,), (p,), (d,) = pool.kernel, pool.stride, pool.padding, pool.dilation
    x4 = call(gm, aten.unsqueeze.default, (x, 2), node)
    if node.target == aten.max_pool1d.default:
        pooled = call(gm, aten.max_pool2d.default, (x4, [1, k], [1, s], [0, p], [1, d], pool.ceil_mode), node)
    else:
        pooled = call(gm, aten.avg_pool2d.default,
                      (x4, [1, k], [1, s], [0, p], pool.ceil_mode, arg(node, "count_include_pad"), None), node)
    return call(gm, aten.squeeze.dims, (pooled, [2]), node)


def pool1d_to_pool2d(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, POOL2D + POOL1D,
                         lambda gm, node: (_batch_unbatched_pool2d if node.target in POOL2D else _pool1d)(gm, node))

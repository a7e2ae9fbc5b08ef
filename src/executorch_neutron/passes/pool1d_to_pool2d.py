"""ATen pass: max_pool1d / avg_pool1d -> unsqueeze(2), max_pool2d / avg_pool2d over a 1 x L image, squeeze(2);
and a 2D pool (max, average, adaptive average) of an unbatched (C, H, W) input -> unsqueeze(0), the pool on
(1, C, H, W), squeeze(0), so the pool converter sees the rank-4 input it needs.

Without it, ExecuTorch decomposes 1D pools after quantization and the inserted views have no int8 annotation.
Runs before quantization (NeutronQuantizer.transform_for_annotation).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_utils import arg, call, finish

aten = torch.ops.aten


def _one(v, default):
    v = default if v is None or (isinstance(v, (list, tuple)) and len(v) == 0) else v
    return int(v[0]) if isinstance(v, (list, tuple)) else int(v)


POOL2D = (aten.max_pool2d.default, aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default)


def _batch_unbatched_pool2d(gm: GraphModule, node) -> None:
    """pool2d(x) of a rank-3 x -> squeeze(pool2d(unsqueeze(x, 0)), [0]), the other arguments unchanged."""
    with gm.graph.inserting_before(node):
        x4 = call(gm, aten.unsqueeze.default, (node.args[0], 0), node)
        pool = call(gm, node.target, (x4, *node.args[1:]), node)
        out = call(gm, aten.squeeze.dims, (pool, [0]), node)
    node.replace_all_uses_with(out)
    gm.graph.erase_node(node)


def pool1d_to_pool2d(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in POOL2D:
            val = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
            if val is not None and val.dim() == 3 and not node.kwargs:
                _batch_unbatched_pool2d(gm, node)
            continue
        if node.op != "call_function" or node.target not in (aten.max_pool1d.default, aten.avg_pool1d.default):
            continue
        x = arg(node, "self")
        val = x.meta.get("val") if hasattr(x, "meta") else None
        if val is None or val.dim() != 3:
            continue
        k = _one(arg(node, "kernel_size"), None)
        s = _one(arg(node, "stride"), k)
        p = _one(arg(node, "padding"), 0)
        ceil = arg(node, "ceil_mode")
        with gm.graph.inserting_before(node):
            x4 = call(gm, aten.unsqueeze.default, (x, 2), node)
            if node.target == aten.max_pool1d.default:
                d = _one(arg(node, "dilation"), 1)
                pool = call(gm, aten.max_pool2d.default, (x4, [1, k], [1, s], [0, p], [1, d], ceil), node)
            else:
                pool = call(gm, aten.avg_pool2d.default,
                            (x4, [1, k], [1, s], [0, p], ceil, arg(node, "count_include_pad"), None), node)
            out = call(gm, aten.squeeze.dims, (pool, [2]), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

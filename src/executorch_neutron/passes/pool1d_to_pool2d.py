"""ATen pass: max_pool1d / avg_pool1d -> unsqueeze(2), max_pool2d / avg_pool2d over a 1 x L image, squeeze(2).

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


def pool1d_to_pool2d(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
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

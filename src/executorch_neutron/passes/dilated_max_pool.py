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
from torch.fx import GraphModule

from .fx_utils import arg, call, finish

aten = torch.ops.aten


def _pair(v, default):
    v = default if v is None or (isinstance(v, (list, tuple)) and len(v) == 0) else v
    v = [int(v)] if isinstance(v, int) else [int(t) for t in v]
    return v * 2 if len(v) == 1 else v


def dilated_max_pool(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.max_pool2d.default:
            continue
        x = node.args[0]
        val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        k = _pair(arg(node, "kernel_size"), None)
        s, p, d = _pair(arg(node, "stride"), k), _pair(arg(node, "padding"), 0), _pair(arg(node, "dilation"), 1)
        if val is None or val.dim() != 4 or d == [1, 1] or any(p) or arg(node, "ceil_mode"):
            continue
        out = [(int(val.shape[2 + i]) - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
        if min(out) < 1:
            continue
        with gm.graph.inserting_before(node):
            taps = []
            for jh in range(k[0]):
                rows = call(gm, aten.slice.Tensor, (x, 2, jh * d[0], jh * d[0] + (out[0] - 1) * s[0] + 1), node)
                for jw in range(k[1]):
                    start = jw * d[1]
                    taps.append(call(gm, aten.slice.Tensor, (rows, 3, start, start + (out[1] - 1) * s[1] + 1), node))
            m = taps[0]
            for t in taps[1:]:
                m = call(gm, aten.maximum.default, (m, t), node)
            if s != [1, 1]:
                m = call(gm, aten.max_pool2d.default, (m, [1, 1], s, [0, 0], [1, 1], False), node)
        node.replace_all_uses_with(m)
        gm.graph.erase_node(node)
    return finish(gm)

"""ATen pass: a mean over the length of a rank-3 (N, C, L) tensor -> unsqueeze(2), mean over H and W of the
(N, C, 1, L) image, squeeze.

Neutron reduces 4D tensors over H and W only (mean.dim row of the operator table); 1D audio and sensor models end
with a global average over time (`x.mean(-1)` or `adaptive_avg_pool1d(x, 1)`). Both become the 4D mean, so they
run on the NPU instead of leaving the last layers on the CPU. Runs before quantization
(NeutronQuantizer.transform_for_annotation); the unsqueeze/squeeze are annotated like any other view.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _rank3_input(node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    return x if isinstance(val, torch.Tensor) and val.dim() == 3 else None


def _keepdim(node: Node) -> bool | None:
    """keepdim of a mean over the last axis only, or of adaptive_avg_pool1d(x, 1); None for anything else."""
    if node.target == aten.adaptive_avg_pool1d.default:
        size = arg(node, "output_size")
        return True if list(size) == [1] else None
    if node.target == aten.mean.dim and arg(node, "dtype") is None:
        dims = arg(node, "dim")
        if dims is not None and [d % 3 for d in dims] == [2]:
            return bool(arg(node, "keepdim"))
    return None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, keepdim = _rank3_input(node), _keepdim(node)
    if x is None or keepdim is None:
        return None
    x4 = call(gm, aten.unsqueeze.default, (x, 2), node)
    mean = call(gm, aten.mean.dim, (x4, [-1, -2], True), node)
    return call(gm, aten.squeeze.dims, (mean, [2] if keepdim else [2, 3]), node)


def mean1d_to_mean2d(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.mean.dim, aten.adaptive_avg_pool1d.default), _rewrite)

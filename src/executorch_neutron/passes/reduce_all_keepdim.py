"""ATen pass: a reduction to a 0-d scalar (`x.sum()`, `x.mean()`, `torch.amax(x)`, `x.max()`, `x.amin(dim=(0, 1))`
of a rank-2 x, ...) -> the same reduction over those dims with keepdim, then a reshape to the scalar.

A 0-d tensor cannot be a Neutron partition's boundary (partition/support.py), so the reduction would stay on the
CPU; NXP's release delegates sum, mean, amax and amin with a scalar result. With keepdim the reduction runs on the
NPU with a (1, ..., 1) output and only the reshape to () is left on the CPU (a view: no computation). Runs before
quantization (NeutronQuantizer.transform_for_annotation); the reshape is annotated like any other view.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..core.exported import schema_args
from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten
#: the reductions rewritten, each with the overload that takes (input, dims, keepdim)
_KEEPDIM = {aten.sum.default: aten.sum.dim_IntList, aten.sum.dim_IntList: aten.sum.dim_IntList,
            aten.mean.default: aten.mean.dim, aten.mean.dim: aten.mean.dim,
            aten.amax.default: aten.amax.default, aten.amin.default: aten.amin.default,
            aten.max.default: aten.amax.default, aten.min.default: aten.amin.default}
_ALL = (aten.sum.default, aten.mean.default, aten.max.default, aten.min.default)  # reduce every dim, no dim arg


def _scalar_reduction_input(node: Node) -> Node | None:
    """The input of a float reduction of a tensor of rank >= 1 to a 0-d value (no dtype conversion), else None."""
    if schema_args(node).get("dtype") is not None:
        return None
    x, out = node.args[0], node.meta.get("val")
    val = x.meta.get("val") if isinstance(x, Node) else None
    ok = (isinstance(val, torch.Tensor) and val.dim() >= 1 and val.is_floating_point()
          and isinstance(out, torch.Tensor) and out.dim() == 0 and out.dtype == val.dtype)
    return x if ok else None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = _scalar_reduction_input(node)
    if x is None:
        return None
    dims = arg(node, "dim") if node.target not in _ALL else None
    dims = [dims] if isinstance(dims, int) else list(dims or range(x.meta["val"].dim()))
    reduced = call(gm, _KEEPDIM[node.target], (x, dims, True), node)
    return call(gm, aten.reshape.default, (reduced, []), node)


def reduce_all_keepdim(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, tuple(_KEEPDIM), _rewrite)

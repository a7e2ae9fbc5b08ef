"""ATen pass: F.normalize(x, p=2, dim) -> x * rsqrt(sum(x * x, dim, keepdim) + eps^2).

F.normalize exports as x / clamp_min(linalg_vector_norm(x, 2, dim, keepdim), eps) (expanded to x's shape); the
NPU has no norm and no division by a computed tensor, but it has every piece of the rewrite (mul, sum over a dim,
add of a scalar, rsqrt, broadcasting mul), each quantized on its own, and PyTorch's quantized model computes the
same graph. sqrt(s + eps^2) instead of max(sqrt(s), eps) differs only for norms near eps (1e-12 by default), where
both results are x / eps-sized. x / x.norm(2, dim, keepdim=True) (no eps) is rewritten too, without the add.
L2-normalized embeddings (face and speaker verification, retrieval heads) are the case this is for. Not made
where the target's operator table has no rsqrt (Neutron's `documented` profile). Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten
_THROUGH = (aten.expand_as.default, aten.expand.default)


def _norm_of(node: Node, x: Node) -> tuple[list[int], float] | None:
    """(dims, eps) when `node` is the L2 norm of `x` over dims (keepdim), clamped below by eps (or not: eps 0)."""
    while isinstance(node, Node) and node.op == "call_function" and node.target in _THROUGH:
        node = node.args[0]
    eps = 0.0
    if isinstance(node, Node) and node.target == aten.clamp_min.default:
        eps, node = float(node.args[1]), node.args[0]
    if not (isinstance(node, Node) and node.target == aten.linalg_vector_norm.default and node.args[0] is x):
        return None
    if float(arg(node, "ord")) != 2.0 or not arg(node, "keepdim") or arg(node, "dtype") is not None:
        return None
    dims = arg(node, "dim")
    rank = x.meta["val"].dim()
    return (list(range(rank)) if dims is None else [int(d) for d in dims]), eps


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    if not isinstance(x, Node) or not isinstance(x.meta.get("val"), torch.Tensor):
        return None
    found = _norm_of(node.args[1], x)
    if found is None:
        return None
    dims, eps = found
    s = call(gm, aten.sum.dim_IntList, (call(gm, aten.mul.Tensor, (x, x), node), dims, True), node)
    if eps:
        s = call(gm, aten.add.Tensor, (s, eps * eps), node)
    return call(gm, aten.mul.Tensor, (x, call(gm, aten.rsqrt.default, (s,), node)), node)


def l2_normalize_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.div.Tensor, _rewrite)

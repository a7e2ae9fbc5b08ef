"""ATen pass: linalg_vector_norm(x, 2, dims, keepdim) (torch.norm, x.norm(dim=...)) -> s * rsqrt(s + tiny) with
s = sum(x * x, dims, keepdim); a hand-written norm, sqrt(s) of such a sum (x.pow(2).sum(-1).sqrt()), likewise.

No back end has a norm or a square-root kernel, but sqrt(s) = s * rsqrt(s) for s > 0, from pieces each table has
(mul, sum over dims, add of a scalar, rsqrt, mul), each quantized on its own, and PyTorch's quantized model
computes the same graph. The int8 s is zero or at least one step, so the rsqrt's calibrated range spans at most
sqrt(255) = 16:1 and its step is at most 6 % of its smallest value (a rounding error of 3 %); the added 1e-24 (a
no-op in int8) keeps a zero vector's float norm 0 instead of 0 * inf. Any other square root stays (of a sum of
squares alone is the input known not to be negative). F.normalize's norm (a division by it) is rewritten first,
by l2_normalize_decompose. Only ord 2; other orders stay float ops with their reasons. Not made where the target's
operator table has no rsqrt (Neutron's `documented` profile). Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten

#: added to the sum of squares: a zero vector's norm stays 0 in float (0 * rsqrt(tiny)), nothing in int8
TINY = 1e-24


def reduced_dims(x: Node, dims) -> list[int]:
    """The dims a reduction names, every dim of `x` when it names none."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(x.meta["val"].dim()))
    return [int(dims)] if isinstance(dims, int) else [int(d) for d in dims]


def sum_of_products(gm: GraphModule, a: Node, b: Node, dims: list[int], keepdim: bool, like: Node) -> Node:
    """sum(a * b, dims, keepdim) (a sum of squares when `a` is `b`)."""
    return call(gm, aten.sum.dim_IntList, (call(gm, aten.mul.Tensor, (a, b), like), dims, keepdim), like)


def _is_sum_of_squares(node) -> bool:
    """`node` is sum(x * x, ...) (or of pow(x, 2), square(x))."""
    if not (isinstance(node, Node) and node.op == "call_function" and node.target == aten.sum.dim_IntList):
        return False
    sq = node.args[0]
    return isinstance(sq, Node) and sq.op == "call_function" and (
        (sq.target == aten.mul.Tensor and sq.args[0] is sq.args[1]) or sq.target == aten.square.default
        or (sq.target == aten.pow.Tensor_Scalar and float(sq.args[1]) == 2.0))


def _root(gm: GraphModule, s: Node, node: Node) -> Node:
    """sqrt(s) = s * rsqrt(s + TINY), inserted before `node`."""
    return call(gm, aten.mul.Tensor, (s, call(gm, aten.rsqrt.default, (call(gm, aten.add.Tensor, (s, TINY), node),),
                                                node)), node)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    if node.target == aten.sqrt.default:
        return _root(gm, node.args[0], node) if _is_sum_of_squares(node.args[0]) else None
    x = node.args[0]
    if not isinstance(x, Node) or not isinstance(x.meta.get("val"), torch.Tensor):
        return None
    if float(arg(node, "ord")) != 2.0 or arg(node, "dtype") is not None or not x.meta["val"].is_floating_point():
        return None
    return _root(gm, sum_of_products(gm, x, x, reduced_dims(x, arg(node, "dim")), bool(arg(node, "keepdim")), node),
                 node)


def vector_norm_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.linalg_vector_norm.default, aten.sqrt.default), _rewrite)

"""ATen pass: cosine_similarity(x, y, dim, eps) -> sum(x * y) * rsqrt(sum(x * x) + eps^2) * rsqrt(sum(y * y) +
eps^2), each sum over `dim`.

No back end has a cosine-similarity or a division kernel; every piece of the rewrite is a table op (mul, sum over a
dim, add of a scalar, rsqrt, mul), each quantized on its own, and PyTorch's quantized model computes the same graph.
One rsqrt per operand (not one of the product of the two sums): each int8 sum is zero or at least one step, so
each rsqrt's calibrated range spans at most 16:1, where the product's small values would lose more. rsqrt(s +
eps^2) instead of 1 / max(sqrt(s), eps) differs only for norms near eps (1e-8 by default). Embedding heads
(face, speaker and retrieval verification) compare with it. Operands of different ranks are left alone. Not made
where the target's operator table has no rsqrt (Neutron's `documented` profile). Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls
from .vector_norm_decompose import sum_of_products

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, y = node.args[:2]
    vals = [getattr(v, "meta", {}).get("val") for v in (x, y)]
    if not all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in vals) or vals[0].dim() != vals[1].dim():
        return None
    dims, eps2 = [int(arg(node, "dim"))], float(arg(node, "eps")) ** 2
    xy = sum_of_products(gm, x, y, dims, False, node)
    for v in (x, y):
        s = call(gm, aten.add.Tensor, (sum_of_products(gm, v, v, dims, False, node), eps2), node)
        xy = call(gm, aten.mul.Tensor, (xy, call(gm, aten.rsqrt.default, (s,), node)), node)
    return xy


def cosine_similarity_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.cosine_similarity.default, _rewrite)

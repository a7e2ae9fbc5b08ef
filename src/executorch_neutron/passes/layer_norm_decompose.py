"""ATen pass: layer_norm -> mean, sub, mul, mean, add eps, rsqrt, mul (then * weight + bias).

    d = x - mean(x, dims, keepdim)          var = mean(d * d, dims, keepdim)
    y = d * rsqrt(var + eps) * weight + bias

dims: the last dim for a normalized shape of one dim; H and W for a rank-4 input normalized over (H, W) (the
spatial mean); any other normalized shape (k trailing dims) is normalized on a [rows, 1, k dims' elements] view
(reshape, the pieces over the last dim, reshape back), as group_norm_decompose does per group: Vela's MEAN reduces
the depth (last) axis only where one of the IFM's height, width and depth is 1, which a mean over C, H and W of a
4x8x8 IFM is not, and the [rows, 1, n] view is (ops/reduce.py writes such means on it). Written out before annotation, every piece is
an int8 op Neutron runs (means, broadcasting sub and mul, rsqrt, adds of a scalar and of the bias of the
normalized shape), each quantized on its own, and PyTorch's quantized model computes the same graph. ExecuTorch
would otherwise run `native_layer_norm` in float on the CPU (transformers' every block; LayerNorm([H, W]) and
LayerNorm([C, H, W]) of image models). Runs before quantization, and not at all where the target's operator table
has no rsqrt (Neutron's `documented` profile): there the pieces would be split between NPU and CPU, so the layer
norm stays one float op (NeutronQuantizer decides, from its `constraints`).
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val")
    if val is None:
        return None
    shape, k = list(val.shape), len(arg(node, "normalized_shape"))
    weight, bias, eps = arg(node, "weight"), arg(node, "bias"), float(arg(node, "eps"))
    rows = x
    if k > 1 and not (k == 2 and len(shape) == 4):  # one row per normalized block
        rows = call(gm, aten.reshape.default, (x, [math.prod(shape[:-k]), 1, math.prod(shape[-k:])]), node)
    dims = [-2, -1] if rows is x and k == 2 else [-1]
    d = call(gm, aten.sub.Tensor, (rows, call(gm, aten.mean.dim, (rows, dims, True), node)), node)
    var = call(gm, aten.mean.dim, (call(gm, aten.mul.Tensor, (d, d), node), dims, True), node)
    r = call(gm, aten.rsqrt.default, (call(gm, aten.add.Tensor, (var, eps), node),), node)
    out = call(gm, aten.mul.Tensor, (d, r), node)
    if rows is not x:
        out = call(gm, aten.reshape.default, (out, shape), node)
    if weight is not None:
        out = call(gm, aten.mul.Tensor, (out, weight), node)
    if bias is not None:
        out = call(gm, aten.add.Tensor, (out, bias), node)
    return out


def layer_norm_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.layer_norm.default, _rewrite)

"""ATen pass: layer_norm over the last dim -> mean, sub, mul, mean, add eps, rsqrt, mul (then * weight + bias).

    d = x - mean(x, -1, keepdim)            var = mean(d * d, -1, keepdim)
    y = d * rsqrt(var + eps) * weight + bias

Written out before annotation, every piece is an int8 op Neutron runs (mean over the last dim, broadcasting sub
and mul, rsqrt, adds of a scalar and of the [C] bias), each quantized on its own, and PyTorch's quantized model
computes the same graph. ExecuTorch would otherwise run `native_layer_norm` in float on the CPU (transformers'
every block). Normalization over more than the last dim is left alone. Runs before quantization, and not at all
where the target's operator table has no rsqrt (Neutron's `documented` profile): there the pieces would be split
between NPU and CPU, so the layer norm stays one float op (NeutronQuantizer decides, from its `constraints`).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    if len(arg(node, "normalized_shape")) != 1 or x.meta.get("val") is None:
        return None
    weight, bias, eps = arg(node, "weight"), arg(node, "bias"), float(arg(node, "eps"))
    d = call(gm, aten.sub.Tensor, (x, call(gm, aten.mean.dim, (x, [-1], True), node)), node)
    var = call(gm, aten.mean.dim, (call(gm, aten.mul.Tensor, (d, d), node), [-1], True), node)
    r = call(gm, aten.rsqrt.default, (call(gm, aten.add.Tensor, (var, eps), node),), node)
    out = call(gm, aten.mul.Tensor, (d, r), node)
    if weight is not None:
        out = call(gm, aten.mul.Tensor, (out, weight), node)
    if bias is not None:
        out = call(gm, aten.add.Tensor, (out, bias), node)
    return out


def layer_norm_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.layer_norm.default, _rewrite)

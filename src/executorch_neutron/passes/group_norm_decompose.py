"""ATen pass: group_norm (and instance_norm, a group norm with one channel per group) -> statistics per group (reshape to [B, G, rest], then layer norm's pieces over the last
dim), reshape back, and the per-channel affine as a depthwise 1x1 convolution.

    g = x.reshape(B, G, -1)         d = g - mean(g, -1, keepdim)         var = mean(d * d, -1, keepdim)
    y = (d * rsqrt(var + eps)).reshape(x.shape)          y = depthwise_conv(y, weight, bias)  (rank 3 or 4)

Written out before annotation, every piece is an int8 op the NPU runs (as layer_norm_decompose's), and the
affine's per-channel scale becomes an int8 per-channel convolution weight (a broadcast multiply by a [C, 1, 1]
tensor would quantize the scales per tensor); PyTorch's quantized model computes the same graph. Other ranks get
the affine as mul + add. ExecuTorch would otherwise run `native_group_norm` in float on the CPU. Not made where
the target's operator table has no rsqrt (Neutron's `documented` profile): the group norm stays one float op.
instance_norm (nn.InstanceNorm1d/2d) is rewritten only where it normalizes with the input's statistics and keeps
no running statistics (track_running_stats=False, the default): its groups are the C channels. Runs before
quantization.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, constant, new_parameter, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    weight, bias = arg(node, "weight"), arg(node, "bias")
    if val is None or val.dim() < 2 or any(p is not None and constant(gm, p) is None for p in (weight, bias)):
        return None
    if node.target == aten.instance_norm.default:
        if not arg(node, "use_input_stats") or arg(node, "running_mean") is not None or val.dim() < 3:
            return None
        groups = val.shape[1]
    else:
        groups = int(arg(node, "num_groups"))
    shape, eps = list(val.shape), float(arg(node, "eps"))
    g = call(gm, aten.reshape.default, (x, [shape[0], groups, math.prod(shape[1:]) // groups]), node)
    d = call(gm, aten.sub.Tensor, (g, call(gm, aten.mean.dim, (g, [-1], True), node)), node)
    var = call(gm, aten.mean.dim, (call(gm, aten.mul.Tensor, (d, d), node), [-1], True), node)
    r = call(gm, aten.rsqrt.default, (call(gm, aten.add.Tensor, (var, eps), node),), node)
    out = call(gm, aten.reshape.default, (call(gm, aten.mul.Tensor, (d, r), node), shape), node)
    return _affine(gm, out, weight, bias, shape, node)


def group_norm_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.group_norm.default, aten.instance_norm.default), _rewrite)


def _affine(gm: GraphModule, y, weight, bias, shape: list[int], node):
    """y * weight + bias per channel (dim 1): a depthwise 1x1 conv for rank 3 and 4, else mul and add."""
    if weight is None and bias is None:
        return y
    c, rank = shape[1], len(shape)
    like = weight if weight is not None else bias
    w = constant(gm, weight).detach() if weight is not None else torch.ones(c)
    if rank in (3, 4):
        wp = new_parameter(gm, "_neutron_group_norm_w", w.reshape(c, 1, *([1] * (rank - 2))), like)
        bp = None if bias is None else new_parameter(gm, "_neutron_group_norm_b", constant(gm, bias).detach(), like)
        conv = aten.conv2d.default if rank == 4 else aten.conv1d.default
        return call(gm, conv, (y, wp, bp, [1] * (rank - 2), [0] * (rank - 2), [1] * (rank - 2), c), node)
    per_channel = [c] + [1] * (rank - 2)
    if weight is not None:
        y = call(gm, aten.mul.Tensor, (y, new_parameter(gm, "_neutron_group_norm_w", w.reshape(per_channel), like)),
                 node)
    if bias is not None:
        b = new_parameter(gm, "_neutron_group_norm_b", constant(gm, bias).detach().reshape(per_channel), like)
        y = call(gm, aten.add.Tensor, (y, b), node)
    return y

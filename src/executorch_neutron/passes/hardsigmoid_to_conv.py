"""ATen pass: hardsigmoid(x) -> depthwise 1x1 convolution (weight 1/6, bias 1/2) + clamp(0, 1).

hardsigmoid(x) = clamp(x / 6 + 1/2, 0, 1). ExecuTorch would decompose it after quantization into float add, div,
clamp on the CPU; as a convolution with a fused (0, 1) clamp it is one int8 table op (the weight 1/6 is exact
in int8 per-channel: 127 * (1/6)/127; the bias is quantized like any conv bias, and PyTorch's quantized model
computes the same rewritten graph). MobileNetV3's squeeze-excite gate is the case this is for. A tensor of another
rank is viewed as one channel of a (1, 1, 1, N) image for the convolution and viewed back (elementwise, so any
arrangement of its elements computes the same). Runs before quantization.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, new_parameter, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    if val is None or not val.is_floating_point() or val.numel() == 0:
        return None
    image = val.dim() == 4
    c = int(val.shape[1]) if image else 1
    x4 = x if image else call(gm, aten.reshape.default, (x, [1, 1, 1, math.prod(val.shape)]), node)
    w = new_parameter(gm, "_neutron_hardsigmoid_w", torch.full((c, 1, 1, 1), 1.0 / 6.0), x)
    b = new_parameter(gm, "_neutron_hardsigmoid_b", torch.full((c,), 0.5), x)
    conv = call(gm, aten.conv2d.default, (x4, w, b, [1, 1], [0, 0], [1, 1], c), node)
    out = call(gm, aten.clamp.default, (conv, 0.0, 1.0), node)
    return out if image else call(gm, aten.reshape.default, (out, list(val.shape)), node)


def hardsigmoid_to_conv(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.hardsigmoid.default, aten.hardsigmoid_.default), _rewrite)

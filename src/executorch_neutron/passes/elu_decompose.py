"""ATen pass: elu(x, alpha, scale, input_scale) -> scale * (relu(x) + alpha * (exp(min(x, 0) * input_scale) - 1)),
with selu and celu as the ELUs they are.

For x > 0 the second term is 0, for x <= 0 the first: exactly ELU (PyTorch's elu takes scale and input_scale;
selu(x) is elu(x, 1.6732632..., 1.0507009..., 1) and celu(x, alpha) is elu(x, alpha, 1, 1 / alpha)). Neither
Neutron's tables nor NXP's SDK have an ELU kernel; EXP is in NXP's current SDK (and Vela's list). exp(min(x, 0) *
input_scale) lies in (0, 1] and the terms after it in [-alpha, 0], so their int8 roundings stay small. Written as
table ops before annotation (the clamp shares x's quantization; the scaling by input_scale, exp, the add, the
scaling by alpha, relu, the sum and the scaling by scale each their own, a scaling by 1 left out), PyTorch's
quantized model computes exactly this graph. Runs before quantization; only where the target's table runs exp.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten

#: torch.nn.functional.selu's constants (its ATen kernel: elu(x, SELU_ALPHA, SELU_SCALE, 1))
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _scaled(gm: GraphModule, y: Node, factor: float, like: Node) -> Node:
    return y if factor == 1.0 else call(gm, aten.mul.Tensor, (y, factor), like)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    if node.target == aten.selu.default:
        alpha, scale, input_scale = SELU_ALPHA, SELU_SCALE, 1.0
    elif node.target == aten.celu.default:
        alpha = float(arg(node, "alpha"))
        if alpha == 0.0:
            return None
        scale, input_scale = 1.0, 1.0 / alpha
    else:
        alpha, scale, input_scale = (float(arg(node, k)) for k in ("alpha", "scale", "input_scale"))
    low = _scaled(gm, call(gm, aten.clamp.default, (x, None, 0.0), node), input_scale, node)
    neg_part = _scaled(gm, call(gm, aten.add.Tensor, (call(gm, aten.exp.default, (low,), node), -1.0), node), alpha,
                       node)
    return _scaled(gm, call(gm, aten.add.Tensor, (call(gm, aten.relu.default, (x,), node), neg_part), node), scale,
                   node)


def elu_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.elu.default, aten.selu.default, aten.celu.default), _rewrite)

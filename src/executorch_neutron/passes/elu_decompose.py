"""ATen pass: elu(x, alpha) -> relu(x) + alpha * (exp(min(x, 0)) - 1).

For x > 0 the second term is 0, for x <= 0 the first: exactly ELU. Neither Neutron's tables nor NXP's SDK have an
ELU kernel; EXP is in NXP's current SDK (and Vela's list). exp(min(x, 0)) lies in (0, 1] and the terms after it
in [-alpha, 0], so their int8 roundings stay small. Written as table ops before annotation (the clamp shares x's
quantization; exp, the add, the scaling by alpha (left out for alpha 1), relu and the sum each their own),
PyTorch's quantized model computes exactly this graph. Only the default scale and input_scale 1 (nn.ELU's) are
rewritten. Runs before quantization; only where the target's table runs exp.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, alpha = node.args[0], float(node.args[1]) if len(node.args) > 1 else 1.0
    if [float(a) for a in node.args[2:4]] not in ([], [1.0], [1.0, 1.0]):
        return None
    low = call(gm, aten.clamp.default, (x, None, 0.0), node)
    neg_part = call(gm, aten.add.Tensor, (call(gm, aten.exp.default, (low,), node), -1.0), node)
    if alpha != 1.0:
        neg_part = call(gm, aten.mul.Tensor, (neg_part, alpha), node)
    return call(gm, aten.add.Tensor, (call(gm, aten.relu.default, (x,), node), neg_part), node)


def elu_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.elu.default, _rewrite)

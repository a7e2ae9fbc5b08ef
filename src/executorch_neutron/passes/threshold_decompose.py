"""ATen pass: threshold(x, t, v) with v != t -> relu(x - t) + t + (v - t) * hardtanh((x - t) * -K, 0, 1).

threshold gives x where x > t and v elsewhere (a jump at t, where(x > t, x, v)); no back end has a comparison or a
select kernel, but every piece of this form is a table op on both back ends (add of a scalar, relu, mul by a
scalar, the RELU_0_TO_1 clamp, add), each quantized on its own, and PyTorch's quantized model computes the same
graph. The indicator of x <= t is a ramp of slope K = 1000 clamped to [0, 1]: in int8, where one step of x - t
is at least 1 / K (x - t spans at least 0.26), the clamp gives exactly 0 or 1 and the jump sits where the int8
x - t changes sign, within half a step of t (x itself is known to the int8 model only to half a step). LiteRT's
reference kernels, which the host runtime runs, compute this MUL's large multiplier right; its default resolver
(XNNPACK) gave wrong indicators. In float, x within 1e-3 below t blends x and v, and x == t gives x. threshold
with v == t is a clamp (threshold_to_clamp). Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten

#: slope of the ramp whose clamp to [0, 1] is the indicator of x <= t (see the module's docstring)
SLOPE = 1e3


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, t, v = node.args[:3]
    t, v = float(t), float(v)
    if t == v or not isinstance(x, Node) or not getattr(x.meta.get("val"), "is_floating_point", lambda: False)():
        return None
    d = call(gm, aten.add.Tensor, (x, -t), node) if t else x
    below = call(gm, aten.hardtanh.default, (call(gm, aten.mul.Tensor, (d, -SLOPE), node), 0.0, 1.0), node)
    jump = call(gm, aten.mul.Tensor, (below, v - t), node)
    if t:
        jump = call(gm, aten.add.Tensor, (jump, t), node)
    return call(gm, aten.add.Tensor, (call(gm, aten.relu.default, (d,), node), jump), node)


def threshold_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.threshold.default, _rewrite)

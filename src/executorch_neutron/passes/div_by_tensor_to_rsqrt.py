"""ATen pass: a / b with b a tensor computed in the model and never negative -> (a * rsqrt(b)) * rsqrt(b).

No back end has an int8 division (or reciprocal) kernel; both run RSQRT, and 1 / b = rsqrt(b)^2 for b > 0. The
rewrite multiplies twice instead of squaring the rsqrt (1 / b quantized on its own would put b's smallest and
largest values 255:1 apart on one int8 scale), each piece quantized on its own, and PyTorch's quantized model
computes the same graph. Made only where b is provably not negative (passes/nonnegative.py: x / (1 + |y|),
a / a.exp().sum(dim), x / (norm + eps)); at b = 0 the float model divides by 0 too. Any other divisor stays a
float division on the CPU with its reason. Constant divisors are div_to_mul's. Not made where the target's
operator table has no rsqrt (Neutron's `documented` profile). Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, constant, rewrite_calls
from .nonnegative import nonnegative

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    a, b = node.args[:2]
    if not isinstance(b, Node) or constant(gm, b) is not None or not nonnegative(gm, b):
        return None
    if not getattr(b.meta.get("val"), "is_floating_point", lambda: False)():
        return None
    r = call(gm, aten.rsqrt.default, (b,), node)
    return call(gm, aten.mul.Tensor, (call(gm, aten.mul.Tensor, (a, r), node), r), node)


def div_by_tensor_to_rsqrt(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.div.Tensor, _rewrite)

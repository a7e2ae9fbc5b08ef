"""ATen pass: a / b with b a tensor computed in the model and never negative -> (a * rsqrt(b)) * rsqrt(b).

No back end has an int8 division (or reciprocal) kernel; both run RSQRT, and 1 / b = rsqrt(b)^2 for b > 0. The
rewrite multiplies twice instead of squaring the rsqrt (1 / b quantized on its own would put b's smallest and
largest values 255:1 apart on one int8 scale), each piece quantized on its own, and PyTorch's quantized model
computes the same graph. Made only where b is provably not negative, read from its producers (`nonnegative`:
abs, relu, exp, sigmoid, softmax, rsqrt, a norm, a square, a clamp with a non-negative minimum; sums, means,
pools and views of such values; sums, products, maxima and concatenations of such values and non-negative
constants): x / (1 + |y|), a / a.exp().sum(dim), x / (norm + eps). At b = 0 the float model divides by 0 too.
Any other divisor stays a float division on the CPU with its reason. Constant divisors are div_to_mul's. Not made
where the target's operator table has no rsqrt (Neutron's `documented` profile). Runs before quantization.
"""

from __future__ import annotations

import numbers

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, constant, rewrite_calls

aten = torch.ops.aten

#: never negative, whatever their operands
_ALWAYS = {aten.abs.default, aten.relu.default, aten.exp.default, aten.sigmoid.default, aten.softmax.int,
           aten._softmax.default, aten.rsqrt.default, aten.sqrt.default, aten.hardsigmoid.default,
           aten.relu6.default, aten.linalg_vector_norm.default, aten.square.default}
_OF_FIRST = {aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default, aten.amax.default,
             aten.view.default, aten.reshape.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
             aten.squeeze.default, aten.expand.default, aten.permute.default, aten.transpose.int,
             aten.clone.default, aten.contiguous.default, aten.slice.Tensor, aten.flatten.using_ints,
             aten.avg_pool2d.default, aten.max_pool2d.default, aten.adaptive_avg_pool2d.default}
_OF_ALL = {aten.add.Tensor, aten.mul.Tensor, aten.maximum.default, aten.cat.default}
_CLAMPS = {aten.clamp.default, aten.clamp_min.default, aten.hardtanh.default}


def _operand_nonnegative(gm: GraphModule, value, depth: int) -> bool:
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return value >= 0
    if isinstance(value, (list, tuple)):
        return all(_operand_nonnegative(gm, v, depth) for v in value)
    t = constant(gm, value)
    if t is not None:
        return bool((t >= 0).all())
    return isinstance(value, Node) and nonnegative(gm, value, depth - 1)


def nonnegative(gm: GraphModule, node: Node, depth: int = 24) -> bool:
    """Whether `node`'s value is never negative, read from its producers (up to `depth` of them)."""
    if depth <= 0 or node.op != "call_function":
        return False
    target, args = node.target, node.args
    if target in _ALWAYS:
        return True
    if target == aten.pow.Tensor_Scalar:
        return isinstance(args[1], numbers.Number) and float(args[1]) % 2 == 0
    if target == aten.mul.Tensor and args[0] is args[1]:
        return True
    if target in _CLAMPS:
        default = -1.0 if target == aten.hardtanh.default else None  # hardtanh's min_val defaults to -1
        low = args[1] if len(args) > 1 else node.kwargs.get("min", node.kwargs.get("min_val", default))
        return isinstance(low, numbers.Number) and low >= 0
    if target in _OF_FIRST:
        return _operand_nonnegative(gm, args[0], depth)
    if target in _OF_ALL:
        if float(node.kwargs.get("alpha", 1)) < 0:
            return False
        return _operand_nonnegative(gm, list(args[:2]) if target != aten.cat.default else args[0], depth)
    return False


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

"""ATen pass: softplus(x, beta) -> relu(b) + log(1 + exp(-|b|)) (b = beta * x, the sum divided by beta), and
mish(x) -> x * tanh(softplus(x)).

The identity log(1 + exp(b)) = max(b, 0) + log(1 + exp(-|b|)) holds for every b; it is logsigmoid's stable form
(softplus(b) = -logsigmoid(-b)), and the term log(1 + exp(-|b|)) is built by log_sigmoid_decompose's
`log1p_exp_neg_abs`: exp(-|b|) lies in (0, 1] and its log1p in (0, ln 2], so their int8 roundings stay small.
PyTorch's softplus returns x itself where beta * x > threshold; the rewrite instead adds log(1 + exp(-beta * x))
there, below exp(-threshold) / beta, so only thresholds of at least 15 (the default is 20; the term is then under
3.1e-7 / beta) are rewritten, others are left alone. ExecuTorch would otherwise decompose softplus and mish after
quantization into float exp / log1p / where ops on the CPU. Written as table ops before annotation (relu, abs, neg,
exp, add, log, the sum, beta's two multiplications (left out for beta 1) and mish's tanh and product, each
quantized on its own), PyTorch's quantized model computes exactly this graph. Runs before quantization; only where
the target's table runs exp and log, mish only where it also runs tanh (`with_tanh`).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls
from .log_sigmoid_decompose import log1p_exp_neg_abs

aten = torch.ops.aten

#: smallest softplus threshold rewritten: log(1 + exp(-15)) = 3.1e-7, below float32 rounding of values near 1
MIN_THRESHOLD = 15.0


def _softplus(gm: GraphModule, x: Node, beta: float, like: Node) -> Node:
    b = x if beta == 1.0 else call(gm, aten.mul.Tensor, (x, beta), like)
    out = call(gm, aten.add.Tensor, (call(gm, aten.relu.default, (b,), like), log1p_exp_neg_abs(gm, b, like)), like)
    return out if beta == 1.0 else call(gm, aten.mul.Tensor, (out, 1.0 / beta), like)


def _rewrite(gm: GraphModule, node: Node, with_tanh: bool) -> Node | None:
    x = node.args[0]
    if node.target == aten.mish.default:
        if not with_tanh:
            return None
        return call(gm, aten.mul.Tensor, (x, call(gm, aten.tanh.default, (_softplus(gm, x, 1.0, node),), node)), node)
    beta, threshold = float(arg(node, "beta")), float(arg(node, "threshold"))
    if beta <= 0 or threshold < MIN_THRESHOLD:
        return None
    return _softplus(gm, x, beta, node)


def softplus_decompose(gm: GraphModule, with_tanh: bool = True) -> GraphModule:
    return rewrite_calls(gm, (aten.softplus.default, aten.mish.default),
                         lambda g, n: _rewrite(g, n, with_tanh))

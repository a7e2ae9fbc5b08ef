"""ATen pass: logsigmoid(x) -> min(x, 0) - log(1 + exp(-|x|)).

The identity holds for every x (log sigmoid(x) = -log(1 + exp(-x)); for x > 0 take out x); each piece stays in a
small range (exp(-|x|) in (0, 1], its log1p in (0, ln 2]), so the int8 roundings of the pieces stay small, unlike
log(sigmoid(x)), whose sigmoid output at LiteRT's fixed scale 1/256 loses every x below -5.5. ExecuTorch would
decompose logsigmoid after quantization into float ops on the CPU. Written as table ops before annotation (clamp
shares x's quantization, abs, neg, exp, add, log and sub each their own), PyTorch's quantized model computes exactly
this graph. The shared term log(1 + exp(-|x|)) (`log1p_exp_neg_abs`) is softplus_decompose's too (softplus(x) =
-logsigmoid(-x)). Runs before quantization; only where the target's table runs exp, log and sub.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def log1p_exp_neg_abs(gm: GraphModule, x: Node, like: Node) -> Node:
    """log(1 + exp(-|x|)) as abs, neg, exp, add, log (inserted at the insertion point, meta from `like`)."""
    e = call(gm, aten.exp.default, (call(gm, aten.neg.default, (call(gm, aten.abs.default, (x,), like),), like),), like)
    return call(gm, aten.log.default, (call(gm, aten.add.Tensor, (e, 1.0), like),), like)


def _rewrite(gm: GraphModule, node: Node) -> Node:
    x = node.args[0]
    low = call(gm, aten.clamp.default, (x, None, 0.0), node)
    return call(gm, aten.sub.Tensor, (low, log1p_exp_neg_abs(gm, x, node)), node)


def log_sigmoid_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.log_sigmoid.default, _rewrite)

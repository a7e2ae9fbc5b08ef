"""ATen pass: var(x, dims, correction, keepdim) -> sum((x - mean(x, dims, keepdim)) ^ 2, dims, keepdim) / (n -
correction), n the number of elements reduced (over H and W of a rank-4 tensor: mean(...) * n / (n - correction)).

x.var(...) exports as aten.var.correction (or aten.var.dim with `unbiased`, correction 1); ExecuTorch runs it in
float on the CPU. The rewrite is a mean over the dims, a broadcasting sub, a square as mul, a sum and one scaling
by a constant, each an int8 op on its own, and PyTorch's quantized model computes the same graph. The sum, not a
mean: the NPU's mean over a non-spatial dim keeps its input's quantization (ops/pooling.py), so a mean of the
squares would round the variance to a step of the largest square (6 output steps from float seen over rows of
50), while the sum has its own output quantization (ops/reduce.py), whose step divided by n - correction is about
the variance's own. The spatial mean of a rank-4 tensor has its own output quantization already (and Vela takes
no sum over H and W of an NCHW tensor), so that case keeps the mean. A correction that leaves no degrees of freedom (n <= correction:
PyTorch gives inf or nan) is left alone. std (a sqrt after it) is not rewritten. Runs before quantization; only
where the target's table runs mean, sub and sum.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() == 0:
        return None
    if node.target == aten.var.dim:
        correction = 1.0 if arg(node, "unbiased") else 0.0
    else:
        correction = 1.0 if arg(node, "correction") is None else float(arg(node, "correction"))
    given = arg(node, "dim")
    dims = list(range(val.dim())) if given is None or list(given) == [] else [int(d) for d in given]
    n = math.prod(val.shape[d] for d in dims)
    if n <= correction:
        return None
    d = call(gm, aten.sub.Tensor, (x, call(gm, aten.mean.dim, (x, dims, True), node)), node)
    spatial = val.dim() == 4 and sorted(d % 4 for d in dims) == [2, 3]
    reduce, factor = (aten.mean.dim, n / (n - correction)) if spatial else (aten.sum.dim_IntList, 1.0 / (n - correction))
    out = call(gm, reduce, (call(gm, aten.mul.Tensor, (d, d), node), dims, bool(arg(node, "keepdim"))), node)
    return out if factor == 1.0 else call(gm, aten.mul.Tensor, (out, factor), node)


def var_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.var.correction, aten.var.dim), _rewrite)

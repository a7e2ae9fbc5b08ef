"""ATen pass: var(x, dims, correction, keepdim) -> mean((x - mean(x, dims, keepdim)) ^ 2, dims, keepdim) * n / (n -
correction), n the number of elements reduced.

x.var(...) exports as aten.var.correction (or aten.var.dim with `unbiased`, correction 1); ExecuTorch runs it in
float on the CPU. The rewrite is layer_norm_decompose's variance (a mean over the dims, a broadcasting sub, a square
as mul, a mean) and one scaling by a constant (left out for correction 0), each an int8 op on its own, and
PyTorch's quantized model computes the same graph. A correction that leaves no degrees of freedom (n <= correction:
PyTorch gives inf or nan) is left alone. std (a sqrt after it) is not rewritten. Runs before quantization; only
where the target's table runs mean and sub.
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
    out = call(gm, aten.mean.dim, (call(gm, aten.mul.Tensor, (d, d), node), dims, bool(arg(node, "keepdim"))), node)
    return out if correction == 0.0 else call(gm, aten.mul.Tensor, (out, n / (n - correction)), node)


def var_decompose(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.var.correction, aten.var.dim), _rewrite)

"""ATen pass: glu(x, dim) -> a * sigmoid(b), with a and b the first and second half of x along dim (two slices).

ExecuTorch keeps `glu` as one float operator on the CPU (NeutronQuantizer annotates no `glu`). Written as table ops
before annotation (slices sharing x's quantization, sigmoid with LiteRT's fixed output 1/256, -128, the mul with its
own output parameters), each is quantized on its own and PyTorch's quantized model computes exactly that graph, as
for silu_to_sigmoid_mul. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    if val is None:
        return None
    dim = arg(node, "dim") % val.dim()
    half = int(val.shape[dim]) // 2
    a = call(gm, aten.slice.Tensor, (x, dim, 0, half), node)
    b = call(gm, aten.slice.Tensor, (x, dim, half, 2 * half), node)
    return call(gm, aten.mul.Tensor, (a, call(gm, aten.sigmoid.default, (b,), node)), node)


def glu_to_sigmoid_mul(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.glu.default, _rewrite)

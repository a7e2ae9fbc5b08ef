"""ATen pass: glu(x, dim) -> a * sigmoid(b), with a and b the first and second half of x along dim (two slices).

ExecuTorch keeps `glu` as one float operator on the CPU (NeutronQuantizer annotates no `glu`). Written as table ops
before annotation (slices sharing x's quantization, sigmoid with LiteRT's fixed output 1/256, -128, the mul with its
own output parameters), each is quantized on its own and PyTorch's quantized model computes exactly that graph, as
for silu_to_sigmoid_mul. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_utils import arg, call, finish

aten = torch.ops.aten


def glu_to_sigmoid_mul(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.glu.default:
            continue
        x = node.args[0]
        val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        if val is None:
            continue
        dim = arg(node, "dim") % val.dim()
        half = int(val.shape[dim]) // 2
        with gm.graph.inserting_before(node):
            a = call(gm, aten.slice.Tensor, (x, dim, 0, half), node)
            b = call(gm, aten.slice.Tensor, (x, dim, half, 2 * half), node)
            gate = call(gm, aten.sigmoid.default, (b,), node)
            out = call(gm, aten.mul.Tensor, (a, gate), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

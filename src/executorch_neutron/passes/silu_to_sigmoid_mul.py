"""ATen pass: silu(x) -> x * sigmoid(x).

ExecuTorch decomposes SiLU after quantization into a float sigmoid and mul on the CPU. Written as the two table
ops before annotation, each is quantized on its own (sigmoid with LiteRT's fixed output 1/256, -128; the mul with
its own output parameters) and PyTorch's quantized model computes exactly that graph. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_utils import call, finish

aten = torch.ops.aten


def silu_to_sigmoid_mul(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in (aten.silu.default, aten.silu_.default):
            continue
        x = node.args[0]
        with gm.graph.inserting_before(node):
            gate = call(gm, aten.sigmoid.default, (x,), node)
            out = call(gm, aten.mul.Tensor, (x, gate), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

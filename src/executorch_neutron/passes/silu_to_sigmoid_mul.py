"""ATen pass: silu(x) -> x * sigmoid(x).

ExecuTorch decomposes SiLU after quantization into a float sigmoid and mul on the CPU. Written as the two table
ops before annotation, each is quantized on its own (sigmoid with LiteRT's fixed output 1/256, -128; the mul with
its own output parameters) and PyTorch's quantized model computes exactly that graph. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node:
    x = node.args[0]
    return call(gm, aten.mul.Tensor, (x, call(gm, aten.sigmoid.default, (x,), node)), node)


def silu_to_sigmoid_mul(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.silu.default, aten.silu_.default), _rewrite)

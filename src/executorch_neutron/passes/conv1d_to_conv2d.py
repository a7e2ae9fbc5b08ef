"""ATen pass: conv1d(x, w) -> squeeze(conv2d(unsqueeze(x, 2), w[:, :, None]), 2), and likewise conv_transpose1d ->
conv_transpose2d.

Neutron convolves 2D tensors only; a 1D convolution over length L is a 2D convolution over a 1 x L image (for the
transposed convolution too: its weight [in, out / groups, k] becomes [in, out / groups, 1, k]). Runs before
quantization (NeutronQuantizer.transform_for_annotation), so the unsqueeze/squeeze get int8 annotations like any
other view and the whole chain can be delegated. The 4D weight becomes a new parameter of the module.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, constant, new_parameter, rewrite_calls

aten = torch.ops.aten


def _conv2d(gm: GraphModule, node: Node, x4: Node, w4: Node) -> Node:
    stride, padding, dilation = (list(arg(node, n)) for n in ("stride", "padding", "dilation"))
    return call(gm, aten.conv2d.default, (x4, w4, arg(node, "bias"), [1, stride[0]], [0, padding[0]],
                                          [1, dilation[0]], arg(node, "groups")), node)


def _conv_transpose2d(gm: GraphModule, node: Node, x4: Node, w4: Node) -> Node:
    stride, padding, out_padding, dilation = (list(arg(node, n)) for n in
                                              ("stride", "padding", "output_padding", "dilation"))
    return call(gm, aten.conv_transpose2d.input, (x4, w4, arg(node, "bias"), [1, stride[0]], [0, padding[0]],
                                                  [0, out_padding[0]], arg(node, "groups"), [1, dilation[0]]), node)


_REWRITES = {aten.conv1d.default: _conv2d, aten.conv_transpose1d.default: _conv_transpose2d}


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, w_node = arg(node, "input"), arg(node, "weight")
    w = constant(gm, w_node)
    if w is None or w.dim() != 3:
        return None  # non-constant weights stay 1D (the partitioner explains why)
    x4 = call(gm, aten.unsqueeze.default, (x, 2), node)
    w4 = new_parameter(gm, "_neutron_conv2d_weight", w.detach().unsqueeze(2), w_node)
    return call(gm, aten.squeeze.dims, (_REWRITES[node.target](gm, node, x4, w4), [2]), node)


def conv1d_to_conv2d(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, tuple(_REWRITES), _rewrite)

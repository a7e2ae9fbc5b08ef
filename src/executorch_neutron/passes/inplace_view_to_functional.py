"""ATen pass: an in-place `squeeze_` / `unsqueeze_` -> the functional squeeze / unsqueeze, read by every later
reader of the tensor, because the passes and the quantizer read a tensor's shape from the node that made it, which
an in-place view changes behind their back (PyTorch's quantizable LSTM squeezes its initial state in place).

fold_constants folds no constant that the graph mutates, so a squeeze_ of a constant is folded only once it is
functional. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten

#: each in-place view -> its functional form
FUNCTIONAL = {aten.squeeze_.dim: aten.squeeze.dim, aten.squeeze_.dims: aten.squeeze.dims,
              aten.squeeze_.default: aten.squeeze.default, aten.unsqueeze_.default: aten.unsqueeze.default}


def _rewrite(gm: GraphModule, node: Node) -> Node:
    base = node.args[0]
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    new = call(gm, FUNCTIONAL[node.target], tuple(node.args), node)
    for user in [u for u in base.users if u is not node and u is not new and order.get(u, -1) > order[node]]:
        user.replace_input_with(base, new)
    return new


def inplace_view_to_functional(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, tuple(FUNCTIONAL), _rewrite)

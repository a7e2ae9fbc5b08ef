"""ATen pass: torch.matmul of two tensors of one rank (2-D, 3-D, or more with equal batch dims) -> aten.mm / bmm.

`aten.matmul` is not a core ATen op: left alone it decomposes after quantization into expand/view/bmm/view with
no quantize node in between, so none of its pieces can be delegated. Rewritten before annotation it becomes one
int8 bmm (or mm) that Neutron runs. Above rank 3 (multi-head attention: [B, heads, T, D] @ [B, heads, D, T]) the
batch dims are flattened into one: reshape both operands to 3-D, bmm, reshape the result back. Broadcasting
matmuls are left alone.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule

from .fx_utils import call, finish

aten = torch.ops.aten


def _shape(node):
    val = node.meta.get("val") if hasattr(node, "meta") else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def matmul_to_bmm(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.matmul.default:
            continue
        a, b = node.args[0], node.args[1]
        sa, sb, so = _shape(a), _shape(b), _shape(node)
        if sa is None or sb is None or len(sa) != len(sb) or len(sa) < 2 or sa[:-2] != sb[:-2]:
            continue
        with gm.graph.inserting_before(node):
            if len(sa) == 2:
                out = call(gm, aten.mm.default, (a, b), node)
            elif len(sa) == 3:
                out = call(gm, aten.bmm.default, (a, b), node)
            else:
                batch = math.prod(sa[:-2])
                a3 = call(gm, aten.reshape.default, (a, [batch, *sa[-2:]]), node)
                b3 = call(gm, aten.reshape.default, (b, [batch, *sb[-2:]]), node)
                out = call(gm, aten.reshape.default, (call(gm, aten.bmm.default, (a3, b3), node), list(so)), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

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
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _shape(node):
    val = node.meta.get("val") if hasattr(node, "meta") else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    a, b = node.args[0], node.args[1]
    sa, sb, so = _shape(a), _shape(b), _shape(node)
    if sa is None or sb is None or len(sa) != len(sb) or len(sa) < 2 or sa[:-2] != sb[:-2]:
        return None
    if len(sa) == 2:
        return call(gm, aten.mm.default, (a, b), node)
    if len(sa) == 3:
        return call(gm, aten.bmm.default, (a, b), node)
    batch = math.prod(sa[:-2])
    a3 = call(gm, aten.reshape.default, (a, [batch, *sa[-2:]]), node)
    b3 = call(gm, aten.reshape.default, (b, [batch, *sb[-2:]]), node)
    return call(gm, aten.reshape.default, (call(gm, aten.bmm.default, (a3, b3), node), list(so)), node)


def matmul_to_bmm(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.matmul.default, _rewrite)

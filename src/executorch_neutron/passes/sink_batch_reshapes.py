"""ATen pass: a reshape that raises the rank moves below a softmax over the last dim (when it keeps the last dim)
or a multiplication / division by a scalar.

Multi-head attention computes its scores as [B * heads, T, T] (bmm) and views them as [B, heads, T, T] for the
scale and the softmax. Rank-4 tensors are channels-last inside the NPU, so the scale and the softmax over the last
dim would need transposes around them; on the 3-D scores they need none. softmax(reshape(x)) = reshape(softmax(x))
when the last dim is kept, and a scalar product commutes with any reshape. The reshapes that meet below (back to
3-D for the next bmm) collapse into none (`permute_rank4`'s reshape collapsing). Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten
_RESHAPES = (aten.view.default, aten.reshape.default, aten._unsafe_view.default)
_SOFTMAX = (aten.softmax.int, aten._softmax.default)
_SCALAR_OPS = (aten.mul.Tensor, aten.div.Tensor)


def _shape(node) -> tuple | None:
    val = node.meta.get("val") if isinstance(node, Node) else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def _sinkable(node: Node, src: tuple, dst: tuple) -> bool:
    if len(src) >= len(dst):  # only towards a lower rank
        return False
    if node.target in _SOFTMAX:
        return node.args[1] % len(dst) == len(dst) - 1 and src[-1:] == dst[-1:]
    return node.target in _SCALAR_OPS and isinstance(node.args[1], (int, float)) and len(node.args) == 2


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    r = node.args[0]
    if not (isinstance(r, Node) and r.op == "call_function" and r.target in _RESHAPES):
        return None
    x = r.args[0]
    src, dst = _shape(x), _shape(r)
    if src is None or dst is None or not _sinkable(node, src, dst):
        return None
    args = (x, -1, *node.args[2:]) if node.target in _SOFTMAX else (x, *node.args[1:])
    return call(gm, aten.reshape.default, (call(gm, node.target, args, node), list(dst)), node)


def sink_batch_reshapes(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, _SOFTMAX + _SCALAR_OPS, _rewrite)

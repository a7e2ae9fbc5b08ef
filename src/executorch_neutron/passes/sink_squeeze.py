"""Graph pass: move the squeeze after a conv below the batch norm / activation that follows it.

The ATen passes rewrite conv1d as unsqueeze -> conv2d -> squeeze (`passes/conv1d_to_conv2d.py`). The squeeze
then sits between the conv and its batch norm or activation, which breaks the fused patterns conv[+bn][+act]
(an extra q/dq pair and a separate activation op) and, in QAT, torchao's conv+bn folding. Elementwise
activations commute with any squeeze and batch norm with a squeeze of dims >= 2 (it normalizes dim 1), so
conv2d -> squeeze -> bn -> relu becomes conv2d -> bn -> relu -> squeeze, computing the same values.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..ops.fusion import aten_activations
from .fx_utils import BN_EPS_INDEX

BATCH_NORM = frozenset(BN_EPS_INDEX)
FUSABLE_ACTIVATIONS = aten_activations()

aten = torch.ops.aten

_SQUEEZES = (aten.squeeze.dims, aten.squeeze.dim)
_PRODUCERS = (aten.conv2d.default, aten.conv_transpose2d.input, aten.linear.default)


def _squeezed_dims(sq: Node) -> list[int] | None:
    src = sq.args[0].meta.get("val")
    if src is None or len(sq.args) < 2:
        return None
    dims = sq.args[1] if isinstance(sq.args[1], (list, tuple)) else [sq.args[1]]
    return [d % src.dim() for d in dims]


def _commutes(sq: Node, user: Node) -> bool:
    if user.target in FUSABLE_ACTIVATIONS:
        return True
    if user.target == aten.batch_norm.default:
        dims = _squeezed_dims(sq)
        return dims is not None and all(d >= 2 for d in dims)
    return False


def _from_conv(node: Node) -> bool:
    while node.op == "call_function" and (node.target in FUSABLE_ACTIVATIONS or node.target in BATCH_NORM):
        node = node.args[0]
    return node.op == "call_function" and node.target in _PRODUCERS


def _fresh(val):
    try:
        return val.clone()
    except Exception:
        return val


def sink_squeeze(gm: GraphModule) -> GraphModule:
    changed = True
    while changed:
        changed = False
        for sq in list(gm.graph.nodes):
            if sq.op != "call_function" or sq.target not in _SQUEEZES or len(sq.users) != 1:
                continue
            user = next(iter(sq.users))
            src = sq.args[0]
            if user.args[0] is not sq or not _commutes(sq, user) or not _from_conv(src) or len(src.users) != 1:
                continue
            with gm.graph.inserting_after(user):
                moved = gm.graph.call_function(sq.target, (user, *sq.args[1:]))
            moved.meta = dict(user.meta)  # the squeezed value keeps the activation's shape and module info
            user.replace_all_uses_with(moved, delete_user_cb=lambda n: n is not moved)
            user.args = (src, *user.args[1:])
            if "val" in src.meta:
                user.meta["val"] = _fresh(src.meta["val"])
            gm.graph.erase_node(sq)
            changed = True
    gm.graph.lint()
    gm.recompile()
    return gm

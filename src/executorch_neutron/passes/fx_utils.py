"""Small helpers shared by the ATen-level passes: argument access, new nodes with fake values, new parameters, the
loop of a pass that rewrites one call at a time (`rewrite_calls`)."""

from __future__ import annotations

import operator
from typing import Callable

import torch
from torch.fx import GraphModule, Node

from ..core.exported import schema_args
from ..core.meta_keys import SOURCE_OP

_KEEP_META = ("nn_module_stack", "stack_trace", "source_fn_stack", "torch_fn", "custom")
#: node meta flag a pass sets on a node it writes: the quantizer gives the node's output its first input's
#: quantization (an exact rewrite of an op that shares its input's, e.g. align_corners_resize_to_linear)
SHARE_INPUT_QPARAMS = "share_input_qparams"


def arg(node: Node, name: str):
    """Argument `name` of an aten call, positional or keyword, with the schema default (`exported.schema_args`)."""
    args = schema_args(node)
    if name not in args:
        raise KeyError(f"{node.target} has no argument {name!r}")
    return args[name]


def constant(gm: GraphModule, node: object) -> torch.Tensor | None:
    """The tensor behind a get_attr node, else None."""
    if not isinstance(node, Node) or node.op != "get_attr":
        return None
    value = gm
    for part in node.target.split("."):
        value = getattr(value, part)
    return value if isinstance(value, torch.Tensor) else None


#: batch-norm ops with running statistics -> the index of their eps argument
BN_EPS_INDEX = {torch.ops.aten.batch_norm.default: 7, torch.ops.aten._native_batch_norm_legit_no_training.default: 6}


def bn_output_readers(bn: Node) -> list[Node] | None:
    """Nodes that read a batch norm's normalized tensor: the bn node itself, or its getitem(0) for the 3-output
    variant; None when its mean/invstd outputs are read (it cannot be replaced)."""
    if bn.target == torch.ops.aten.batch_norm.default:
        return [bn]
    outs = list(bn.users)
    if not all(u.target is operator.getitem for u in outs):
        return None
    if any(u.args[1] != 0 and len(u.users) > 0 for u in outs):
        return None
    return [u for u in outs if u.args[1] == 0]


def bn_affine(gm: GraphModule, bn: Node) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(scale, shift) per channel of an inference batch norm with constant statistics: bn(x) = x * scale + shift;
    None when a statistic is not a constant."""
    gamma, beta, mean, var = (constant(gm, a) for a in bn.args[1:5])
    if mean is None or var is None or (bn.args[1] is not None and gamma is None) or (
            bn.args[2] is not None and beta is None):
        return None
    i = BN_EPS_INDEX[bn.target]
    eps = bn.args[i] if len(bn.args) > i else 1e-5
    mean, var = mean.detach(), var.detach()
    scale = (torch.ones_like(mean) if gamma is None else gamma.detach()) / torch.sqrt(var + eps)
    return scale, (torch.zeros_like(mean) if beta is None else beta.detach()) - mean * scale


def replace_bn(gm: GraphModule, bn: Node, readers: list[Node], new: Node) -> None:
    """Point the readers of batch norm `bn` at `new` and erase the batch norm and its getitems."""
    for reader in readers:
        reader.replace_all_uses_with(new)
    for reader in readers:
        if reader is not bn and not reader.users:
            gm.graph.erase_node(reader)
    for leftover in [u for u in bn.users if not u.users]:
        gm.graph.erase_node(leftover)
    if not bn.users:
        gm.graph.erase_node(bn)


def _fake(value):
    return value.meta.get("val") if isinstance(value, Node) else (
        [_fake(v) for v in value] if isinstance(value, (list, tuple)) else value)


def refresh_val(node: Node) -> None:
    """Recompute `node`'s fake value from its arguments' (after a pass changed an argument's shape)."""
    try:
        node.meta["val"] = node.target(*[_fake(a) for a in node.args], **node.kwargs)
    except Exception:  # no fake value: downstream passes treat the node as unknown
        node.meta.pop("val", None)


def call(gm: GraphModule, target, args: tuple, like: Node) -> Node:
    """Insert `target(*args)` (before the current insertion point) with meta copied from `like` and a fake value."""
    node = gm.graph.call_function(target, args)
    for key in _KEEP_META:
        if key in like.meta:
            node.meta[key] = like.meta[key]
    if like.op == "call_function":  # the operator the model wrote, through every rewrite (precision rules name it)
        node.meta[SOURCE_OP] = like.meta.get(SOURCE_OP, str(like.target))
    try:
        node.meta["val"] = target(*[_fake(a) for a in args])
    except Exception:  # no fake value: downstream passes treat the node as unknown
        pass
    return node


def new_parameter(gm: GraphModule, stem: str, value: torch.Tensor, like: Node) -> Node:
    """Register `value` as a parameter of `gm` and return a get_attr node for it (before the insertion point)."""
    i = 0
    while hasattr(gm, f"{stem}{i}"):
        i += 1
    name = f"{stem}{i}"
    old = constant(gm, like) if like.op == "get_attr" else None
    requires_grad = bool(old is not None and old.requires_grad)
    gm.register_parameter(name, torch.nn.Parameter(value.detach().clone(), requires_grad=requires_grad))
    node = gm.graph.get_attr(name)
    ref = like.meta.get("val")
    if isinstance(ref, torch.Tensor) and getattr(ref, "fake_mode", None) is not None:
        node.meta["val"] = ref.fake_mode.from_tensor(getattr(gm, name))
    else:
        node.meta["val"] = getattr(gm, name)
    return node


def finish(gm: GraphModule) -> GraphModule:
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return gm


def rewrite_calls(gm: GraphModule, targets, rewrite: Callable[[GraphModule, Node], Node | None]) -> GraphModule:
    """Run `rewrite(gm, node)` on each call of `targets` (an op or a tuple of ops), in graph order, with new nodes
    inserted before the call. It returns what replaces the call: a new node (the call's readers move to it and the
    call is erased), the call itself when it changed it in place, or None when it leaves the call alone (having
    inserted nothing). Ends with `finish(gm)` when anything changed."""
    targets = targets if isinstance(targets, tuple) else (targets,)
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in targets:
            continue
        with gm.graph.inserting_before(node):
            out = rewrite(gm, node)
        if out is None:
            continue
        changed = True
        if out is not node:
            node.replace_all_uses_with(out)
            gm.graph.erase_node(node)
    return finish(gm) if changed else gm

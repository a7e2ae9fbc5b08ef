"""Small helpers shared by the ATen-level passes: argument access, new nodes with fake values, new parameters."""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..exported import schema_args

_KEEP_META = ("nn_module_stack", "stack_trace", "source_fn_stack", "torch_fn", "custom")


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


def _fake(value):
    return value.meta.get("val") if isinstance(value, Node) else (
        [_fake(v) for v in value] if isinstance(value, (list, tuple)) else value)


def call(gm: GraphModule, target, args: tuple, like: Node) -> Node:
    """Insert `target(*args)` (before the current insertion point) with meta copied from `like` and a fake value."""
    node = gm.graph.call_function(target, args)
    for key in _KEEP_META:
        if key in like.meta:
            node.meta[key] = like.meta[key]
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

"""Normalised node arguments: every converter and support check reads `args["name"]`, never `node.args[i]`."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node


def _schema(target):
    schema = getattr(target, "_schema", None)  # ATen OpOverload (its `_op` is the C++ builtin)
    return schema if schema is not None else target._op._schema  # edge op


class NodeArgs(dict):
    """Arguments of a call_function node by schema name, defaults filled in."""

    def __init__(self, node: Node):
        super().__init__()
        self.node = node
        schema = _schema(node.target)
        for i, arg in enumerate(schema.arguments):
            if i < len(node.args):
                value = node.args[i]
            elif arg.name in node.kwargs:
                value = node.kwargs[arg.name]
            elif arg.has_default_value():
                value = arg.default_value
            else:
                value = None
            self[arg.name] = value

    # shapes -------------------------------------------------------------------------------------------------
    @staticmethod
    def shape_of(value: Any) -> tuple[int, ...]:
        if isinstance(value, Node):
            val = value.meta.get("val")
            if isinstance(val, torch.Tensor):
                return tuple(val.shape)
        raise ValueError(f"{value} has no tensor shape")

    def shape(self, name: str) -> tuple[int, ...]:
        return self.shape_of(self[name])

    @property
    def out_shape(self) -> tuple[int, ...]:
        val = self.node.meta.get("val")
        if isinstance(val, (tuple, list)):
            val = val[0]
        return tuple(val.shape)

"""Normalised node arguments: every converter and support check reads `args["name"]`, never `node.args[i]`."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node

from ..core.exported import schema_args


class NodeArgs(dict):
    """Arguments of a call_function node by schema name, defaults filled in (`exported.schema_args`)."""

    def __init__(self, node: Node):
        super().__init__(schema_args(node))
        self.node = node

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

"""Normalised node arguments: every converter and support check reads `args["name"]`, never `node.args[i]`; the
size arguments of pools and convolutions as one int per spatial axis (`spatial`, `pool_args`), for the converters,
the back ends' constraints and the ATen passes alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Node

from ..core.exported import op_schema, schema_args


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


def spatial(value, default, n: int = 2) -> list[int]:
    """A kernel / stride / padding / dilation / output-size argument as n ints: an int or a one-element list is
    repeated, None or an empty list (ATen's `stride=[]`) is `default` (normalised the same way)."""
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        value = default
    value = [int(value)] if isinstance(value, int) else [int(v) for v in value]
    return value * n if len(value) == 1 else value


@dataclass(frozen=True)
class PoolArgs:
    """The window of a max or average pool, one int per pooled axis (1, 2 or 3 of them)."""

    kernel: list[int]
    stride: list[int]
    padding: list[int]
    dilation: list[int]
    ceil_mode: bool


def pool_args(node: Node) -> PoolArgs:
    """PoolArgs of an ATen or edge max_pool / avg_pool call (1-, 2- or 3-D, with or without indices), with ATen's
    defaults: stride = kernel, padding 0, dilation 1 (always, for an average pool), ceil_mode False."""
    args = schema_args(node)
    n = next(a.N for a in op_schema(node.target).arguments if a.name == "kernel_size")
    kernel = spatial(args["kernel_size"], None, n)
    return PoolArgs(kernel, spatial(args["stride"], kernel, n), spatial(args["padding"], 0, n),
                    spatial(args.get("dilation"), 1, n), bool(args["ceil_mode"]))

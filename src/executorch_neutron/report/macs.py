"""Multiply-accumulate counts and tensor byte sizes of FX graph nodes, for the delegation report.

MACs are counted from shapes only, for the operators that dominate compute; every other operator counts 0:

    convolution (conv1d/2d/3d, aten.convolution)   numel(output) * (C_in / groups) * prod(kernel)
                                                    = numel(output) * prod(weight.shape[1:])
    transposed convolution                          numel(input)  * prod(weight.shape[1:])
    linear                                          numel(output) * in_features
    mm / bmm / matmul / addmm / baddbmm             numel(output) * K   (K: the contracted dimension)

Bias additions, activations, pooling and elementwise ops are not counted (they are small next to the above and
the NPU fuses most of them). Works on ATen and edge graphs alike (names are matched without the namespace).
"""

from __future__ import annotations

import math
import operator

import torch
from torch.fx import Node

from ..core.exported import op_base_name

MAC_FORMULA = (
    "convolution: numel(output) * prod(weight.shape[1:]) (= C_in/groups * kernel area per output element); "
    "transposed convolution: numel(input) * prod(weight.shape[1:]); linear: numel(output) * in_features; "
    "mm/bmm/matmul/addmm/baddbmm: numel(output) * K; all other operators: 0"
)

_CONV = {"conv1d", "conv2d", "conv3d", "convolution", "_convolution"}
_CONV_T = {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}
_MATMUL = {"mm", "bmm", "matmul"}
_ADD_MATMUL = {"addmm", "baddbmm"}


def shape(value) -> tuple[int, ...] | None:
    val = value.meta.get("val") if isinstance(value, Node) else value
    if isinstance(val, torch.Tensor) and all(isinstance(d, int) for d in val.shape):
        return tuple(val.shape)
    return None


def nbytes(node: Node) -> int:
    """Bytes of a node's tensor value (0 when it has none or a dynamic shape)."""
    val = node.meta.get("val")
    dims = shape(node)
    if dims is None:
        return 0
    return math.prod(dims) * val.element_size()


def node_macs(node: Node) -> int:
    """MACs of one call_function node (see the module docstring for the formulas)."""
    if node.op != "call_function":
        return 0
    name = op_base_name(node.target)
    args = list(node.args)
    out = shape(node)
    if out is None:
        return 0
    if name in _CONV or name in _CONV_T:
        weight = shape(args[1]) if len(args) > 1 else None
        if weight is None:
            return 0
        transposed = name in _CONV_T or (name in ("convolution", "_convolution") and len(args) > 6 and bool(args[6]))
        counted = shape(args[0]) if transposed else out
        return math.prod(counted or ()) * math.prod(weight[1:]) if counted else 0
    if name == "linear":
        weight = shape(args[1]) if len(args) > 1 else None
        return math.prod(out) * weight[-1] if weight else 0
    if name in _MATMUL or name in _ADD_MATMUL:
        a = shape(args[1] if name in _ADD_MATMUL else args[0])
        return math.prod(out) * a[-1] if a else 0
    return 0


def graph_macs(graph: torch.fx.Graph) -> int:
    return sum(node_macs(n) for n in graph.nodes)


def cpu_work(graph: torch.fx.Graph) -> list[tuple[str, int, int]]:
    """(operator, output elements, MACs) of each node a .pte runs on the CPU: the top-level call_function nodes
    other than delegate calls, getitems and memory planning (quantize / dequantize at the I/O included)."""
    out = []
    for node in graph.nodes:
        name = op_base_name(node.target) if node.op == "call_function" else ""
        if node.op != "call_function" or node.target is operator.getitem or name in ("executorch_call_delegate",
                                                                                       "alloc"):
            continue
        dims = shape(node)
        out.append((name, math.prod(dims) if dims is not None else 0, node_macs(node)))
    return out

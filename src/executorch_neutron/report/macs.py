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
    args = [shape(a) if isinstance(a, Node) else a for a in node.args]
    return op_macs(op_base_name(node.target), args, shape(node))


def op_macs(name: str, args: list, out: tuple[int, ...] | None) -> int:
    """MACs of one call of operator `name` ('convolution', 'addmm': the base name) from its positional arguments
    (a tensor as its shape, None where unknown, any other argument as its value) and its output's shape: the one
    formula of a graph node (`node_macs`) and of a .pte's kernel call (`pte_cpu_work`)."""
    if out is None:
        return 0

    def dims(i: int) -> tuple[int, ...] | None:
        return args[i] if i < len(args) and isinstance(args[i], tuple) else None

    if name in _CONV or name in _CONV_T:
        weight = dims(1)
        if weight is None:
            return 0
        transposed = name in _CONV_T or (name in ("convolution", "_convolution") and len(args) > 6 and bool(args[6]))
        counted = dims(0) if transposed else out
        return math.prod(counted or ()) * math.prod(weight[1:]) if counted else 0
    if name == "linear":
        weight = dims(1)
        return math.prod(out) * weight[-1] if weight else 0
    if name in _MATMUL or name in _ADD_MATMUL:
        a = dims(1 if name in _ADD_MATMUL else 0)
        return math.prod(out) * a[-1] if a else 0
    return 0


def graph_macs(graph: torch.fx.Graph) -> int:
    return sum(node_macs(n) for n in graph.nodes)


def cpu_work(graph: torch.fx.Graph) -> list[tuple[str, int, int]]:
    """(operator, output elements, MACs) of each node a .pte runs on the CPU: the top-level call_function nodes
    other than delegate calls, getitems, memory planning and views (a static, memory-planned view is no instruction
    of the .pte; any other only updates a tensor's sizes), quantize / dequantize at the I/O included. The same list
    as `pte_cpu_work` reads from the .pte's kernel calls."""
    from executorch.exir import memory

    out = []
    for node in graph.nodes:
        if node.op != "call_function" or node.target in (operator.getitem, memory.alloc, memory.view):
            continue
        name = op_base_name(node.target)
        if name == "executorch_call_delegate":
            continue
        dims = shape(node)
        out.append((name, math.prod(dims) if dims is not None else 0, node_macs(node)))
    return out


def pte_cpu_work(plan) -> list[tuple[str, int, int]]:
    """`cpu_work` of a .pte's execution plan (a `pte.PteFile`'s program.execution_plan[i]): (operator, output
    elements, MACs) of each kernel call but ExecuTorch's own views (`executorch_prim::et_view`, no data moved). An
    out-variant kernel's last argument is its result: a tensor's elements count, a list of them (e.g. max pool's
    values and indices) counts 0, as a node of several results does in `cpu_work`."""
    out = []
    for chain in plan.chains:
        for instr in chain.instructions:
            call = instr.instr_args
            if type(call).__name__ != "KernelCall":
                continue
            name = plan.operators[call.op_index].name
            if name == "executorch_prim::et_view":
                continue
            args = [_pte_value(plan.values[i].val) for i in call.args]
            result = args[-1] if args and isinstance(args[-1], tuple) else None
            base = name.split("::")[-1]
            out.append((base, math.prod(result) if result is not None else 0, op_macs(base, args, result)))
    return out


def _pte_value(val):
    """A kernel call's argument as `op_macs` reads it: a tensor as its shape, a bool or int as itself."""
    kind = type(val).__name__
    if kind == "Tensor":
        return tuple(int(d) for d in val.sizes)
    if kind == "Bool":
        return bool(val.bool_val)
    if kind == "Int":
        return int(val.int_val)
    return None

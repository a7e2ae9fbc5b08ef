"""Convert one partition's edge program to an int8 TFLite flatbuffer, and describe its inputs and outputs.

Walks the partition graph once in topological order; every compute node is converted by its registry entry.
Rank-4 values are channels-last inside; at the boundary `tflite.layout.boundary_layout` decides: with
`use_neutron_for_format_conversion` (default) the partition keeps ExecuTorch's layout and converts inside (a
TRANSPOSE at entry/exit, run by the NPU; format flag 0), without it the runtime transposes on the CPU (flag 1).
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.fx import Node

from ..compile_spec import NeutronCompileSpec
from ..core import qdq
from ..core.atomic import write_bytes
from ..core.exported import constants, partition_tag
from ..ops import registry
from ..ops.fusion import activation_codes, fused_activation
from ..ops.registry import CheckContext
from ..tflite.builder import ModelBuilder, Value
from ..tflite.layout import FLATTEN_METADATA, boundary_layout, format_flag, physical_shape, stored_channels_last
from .context import ConversionContext, ConversionError, quant_from


@dataclass(frozen=True)
class ConvertedPartition:
    tflite: bytes
    input_formats: tuple[int, ...]  # per TFLite input: 1 = channels-last (the runtime transposes on the CPU)
    output_formats: tuple[int, ...]
    input_args: tuple[int, ...]  # per TFLite input: index among the delegate's user inputs
    n_args: int
    debug_handles: tuple[tuple[int, ...], ...]  # per TFLite operator: edge debug handles it computes
    # every boundary tensor is laid out in the TFLite as ExecuTorch stores it (flag 1 exactly for channels-last
    # storage): a runtime that copies delegate arguments byte for byte (Ethos-U) reads and writes them right
    io_as_stored: bool = True


def constant_resolver(program: ExportedProgram):
    lookup = constants(program)

    def resolve(node):
        if isinstance(node, Node) and node.op == "placeholder":
            return lookup.get(node.name)
        if isinstance(node, Node) and node.op == "get_attr":
            return getattr(program.graph_module, node.target)
        if isinstance(node, (int, float)):
            return torch.tensor(node)
        return None

    return resolve


def convert_program(program: ExportedProgram, check_ctx: CheckContext, name: str = "partition") -> ConvertedPartition:
    spec = check_ctx.spec
    builder = ModelBuilder(f"executorch-neutron {name} target={spec.target}")
    resolve = constant_resolver(program)
    ctx = ConversionContext(builder, resolve, check_ctx)
    neutron_converts = spec.use_neutron_for_format_conversion

    user_inputs = [n for n in program.graph.nodes if n.op == "placeholder" and resolve(n) is None]
    in_formats, in_args, as_stored = [], [], []
    for idx, node in enumerate(user_inputs):
        if not node.users:
            continue
        quant = _input_quant(ctx, node)
        shape = tuple(int(d) for d in node.meta["val"].shape)
        layout = boundary_layout(len(shape), neutron_converts, stored_channels_last(node))
        t = builder.tensor(node.name, physical_shape(shape, layout), np.int8, quant)
        builder.inputs.append(t)
        ctx.bind(node, Value(t, shape, layout, quant))
        in_formats.append(format_flag(layout))
        in_args.append(idx)
        as_stored.append(format_flag(layout) == stored_channels_last(node))

    debug_handles = []
    absorbed: set[Node] = set()
    for node in program.graph.nodes:
        if node.op != "call_function" or qdq.is_qdq(node) or node in absorbed:
            continue
        if node.target is operator.getitem:
            continue
        entry = registry.lookup(node.target)
        if entry is None:
            raise ConversionError(f"{node.name}: no Neutron converter for {registry.op_name(node.target)}")
        before = builder.num_operators
        entry.convert(ctx, registry.NodeArgs(node))
        handles = [node.meta.get("debug_handle")]
        act = fused_activation(node)
        if act is not None:
            absorbed.add(act)
            handles.append(act.meta.get("debug_handle"))
            _standalone_activation(ctx, node, act)
        handles = tuple(sorted(h for h in handles if isinstance(h, int)))
        debug_handles.extend([handles] * (builder.num_operators - before))

    out_node = next(n for n in program.graph.nodes if n.op == "output")
    out_formats = []
    for arg in out_node.args[0]:
        if not isinstance(arg, Node):
            raise ConversionError(f"partition output {arg!r} is not a tensor")
        v = ctx.value(arg)
        layout = boundary_layout(len(v.shape), neutron_converts, stored_channels_last(arg))
        v = ctx.value(arg, layout)
        if v.tensor in builder.outputs or v.tensor in builder.inputs:
            raise ConversionError(f"partition output {arg.name} repeats another input or output")
        builder.outputs.append(v.tensor)
        out_formats.append(format_flag(layout))
        as_stored.append(format_flag(layout) == stored_channels_last(arg))
    debug_handles.extend([()] * (builder.num_operators - len(debug_handles)))
    if ctx.channels_last_flattens:
        builder.metadata[FLATTEN_METADATA] = json.dumps(
            {builder.tensor_name(t): list(shape) for t, shape in sorted(ctx.channels_last_flattens.items())},
            sort_keys=True).encode()

    return ConvertedPartition(
        tflite=builder.build(),
        input_formats=tuple(in_formats),
        output_formats=tuple(out_formats),
        input_args=tuple(in_args),
        n_args=len(user_inputs),
        debug_handles=tuple(debug_handles),
        io_as_stored=all(as_stored),
    )


def _input_quant(ctx: ConversionContext, node: Node):
    params = [ctx.qparams(u) for u in node.users if qdq.is_dq(u)]
    if not params or len(params) != len(node.users):
        raise ConversionError(f"partition input {node.name} is not an int8 tensor consumed by dequantize nodes")
    if any(not p.same_as(params[0]) for p in params[1:]):
        raise ConversionError(f"partition input {node.name} is dequantized with different parameters")
    if params[0].dtype not in (torch.int8, torch.int16):
        raise ConversionError(f"partition input {node.name} is {params[0].dtype}; partitions compute int8 or int16")
    return quant_from(params[0])


def _standalone_activation(ctx: ConversionContext, producer: Node, act: Node) -> None:
    """Bounds with no fused TFLite code (e.g. clamp(0, 1)) become a separate op on the producer's output."""
    fused, standalone = activation_codes(act)
    if fused is not None:
        return
    v = ctx.value(producer)
    out = ctx.builder.tensor(act.name + "_act", ctx.builder.shape_of(v.tensor), np.int8, v.quant)
    ctx.builder.op(standalone, [v.tensor], [out])
    result = Value(out, v.shape, v.layout, v.quant)
    ctx.bind(producer, result)
    ctx.bind(act, result)


def convert_partition(edge_program: ExportedProgram, compile_specs) -> tuple:
    """The shared front end of every back end's preprocess: (spec, partition tag, ConvertedPartition), with the
    partition's TFLite written to `intermediates_dir` when set."""


    spec = NeutronCompileSpec.from_compile_specs(compile_specs)
    name = partition_tag(edge_program)
    converted = convert_program(edge_program, CheckContext.for_program(spec, edge_program), name)
    if spec.intermediates_dir:
        write_bytes(Path(spec.intermediates_dir) / f"{name}.tflite", converted.tflite)
    return spec, name, converted

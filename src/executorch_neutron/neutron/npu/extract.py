"""Read the eIQ Neutron converter's output: one `NeutronGraph` custom operator holding the device payload.

The contract, and how we read it:
- the converted TFLite holds exactly one operator, a CUSTOM op with custom code `NeutronGraph`;
- its inputs are the partition's real inputs, in the node's own order, followed by three constant tensors:
  microcode, weights, kernels (so it has `n_inputs + 3` inputs);
- its outputs are the partition's real outputs, in the node's own order, followed by a scratch tensor, and, for
  profiling-enabled microcode, a profile and a debug tensor. Our interpretation of "two extra outputs beside the
  scratch": with `n_outputs` real outputs the node has `n_outputs + 1` outputs (payload version 0) or
  `n_outputs + 3` outputs (payload version 1); any other count is an error;
- the node's real inputs/outputs are found among the converted graph's inputs/outputs by tensor index, never by
  position: the device runtime reads Neutron input i from the delegate argument the header maps it to, so the
  header must follow the node's order. The converted graph's inputs/outputs are the partition TFLite's, in the
  same order (the converter keeps the graph signature; NXP's own payload composition relies on the same), which is
  how a graph position becomes a delegate argument;
- microcode word 0 is the magic 0x64434D6E, word 6 the microcode size and word 7 the weights size (both checked
  against the constant buffers' lengths, because the device runtime trusts them to locate the sections).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from ...core.payload import MICROCODE_MAGIC
from ...tflite.reader import opcode_name, read_model
from .errors import ConvertedModelError

CUSTOM_CODE = "NeutronGraph"
_MIN_MICROCODE = 32  # words 0..7 must exist
_CONSTANT_ROLES = ("microcode", "weights", "kernels")


@dataclass(frozen=True)
class NeutronGraphParts:
    microcode: bytes
    weights: bytes
    kernels: bytes
    version: int  # 0: scratch output only; 1: scratch + profile + debug outputs
    input_positions: tuple[int, ...]  # per node input (node order): its position among the graph's inputs
    output_positions: tuple[int, ...]  # per node output (node order): its position among the graph's outputs


def extract(model_bytes: bytes, n_inputs: int, n_outputs: int, name: str = "partition") -> NeutronGraphParts:
    """Parts of the converted model for a partition with `n_inputs`/`n_outputs` real inputs/outputs."""
    model = _parse(model_bytes, name)
    ops = [(sg, op) for sg in (model.subgraphs or []) for op in (sg.operators or [])]
    if len(ops) != 1:
        raise ConvertedModelError(
            f"partition {name!r}: the converted model has {len(ops)} operators; the eIQ Neutron converter must turn "
            f"the whole partition into exactly one NeutronGraph operator. Some operators were not converted: "
            f"keep them on the CPU (operators_not_to_delegate) or lower with reference=True"
        )
    subgraph, op = ops[0]
    code = _custom_code(model, op, name)
    if code != CUSTOM_CODE:
        raise ConvertedModelError(
            f"partition {name!r}: the converted model's only operator is {code!r}, not a {CUSTOM_CODE} custom "
            f"operator; the converter did not compile this partition for the NPU"
        )
    names = _Names(subgraph)
    inputs, outputs = _indices(op.inputs), _indices(op.outputs)
    graph_inputs, graph_outputs = _indices(subgraph.inputs), _indices(subgraph.outputs)
    if len(graph_inputs) != n_inputs or len(graph_outputs) != n_outputs:
        raise ConvertedModelError(
            f"partition {name!r}: the converted graph has {len(graph_inputs)} inputs {names.list(graph_inputs)} and "
            f"{len(graph_outputs)} outputs {names.list(graph_outputs)}; the partition's TFLite has {n_inputs} and "
            f"{n_outputs}. The converter changed the partition's signature; report the TFLite to NXP"
        )
    if len(inputs) != n_inputs + 3:
        raise ConvertedModelError(
            f"partition {name!r}: the NeutronGraph node has {len(inputs)} inputs {names.list(inputs)}; expected the "
            f"partition's {n_inputs} inputs followed by microcode, weights and kernels ({n_inputs + 3})"
        )
    extra = len(outputs) - n_outputs
    if extra not in (1, 3):
        raise ConvertedModelError(
            f"partition {name!r}: the NeutronGraph node has {len(outputs)} outputs {names.list(outputs)}; expected "
            f"the partition's {n_outputs} outputs plus a scratch output ({n_outputs + 1}) or plus scratch, profile "
            f"and debug outputs ({n_outputs + 3})"
        )
    for index, role in zip(inputs[-3:], _CONSTANT_ROLES):
        if index in graph_inputs:
            raise ConvertedModelError(
                f"partition {name!r}: the NeutronGraph node's {role} operand is {names.of(index)}, a graph input, "
                f"not a constant buffer: the node lacks its microcode, weights and kernels operands (its last three "
                f"inputs); the installed eIQ Neutron SDK does not follow the payload contract"
            )
    microcode, weights, kernels = (_constant(model, subgraph, model_bytes, index, role, name, names)
                                   for index, role in zip(inputs[-3:], _CONSTANT_ROLES))
    _check_microcode(microcode, weights, name)
    in_pos = _positions(inputs[:n_inputs], graph_inputs, "input", names, name)
    out_pos = _positions(outputs[:n_outputs], graph_outputs, "output", names, name)
    return NeutronGraphParts(microcode, weights, kernels, 0 if extra == 1 else 1, in_pos, out_pos)


def _indices(values) -> list[int]:
    """A tensor index list of the object API (None, a list or a numpy array) as Python ints."""
    return [] if values is None else [int(v) for v in values]


class _Names:
    """Tensor descriptions for messages: `tensor 3 'x'`."""

    def __init__(self, subgraph: schema.SubGraphT) -> None:
        self._tensors = subgraph.tensors or []

    def of(self, index: int) -> str:
        if not 0 <= index < len(self._tensors):
            return f"tensor {index} (which does not exist)"
        raw = self._tensors[index].name
        text = raw.decode(errors="replace") if isinstance(raw, (bytes, bytearray)) else str(raw or "")
        return f"tensor {index} {text!r}"

    def list(self, indices) -> str:
        return "[" + ", ".join(self.of(i) for i in indices) + "]"


def _positions(node_tensors: list[int], graph_tensors: list[int], kind: str, names: _Names, name: str) -> tuple[int, ...]:
    """Per node tensor, its position among the graph's inputs (or outputs), matched by tensor index."""
    positions = []
    for k, index in enumerate(node_tensors):
        if index not in graph_tensors:
            raise ConvertedModelError(
                f"partition {name!r}: NeutronGraph {kind} {k} is {names.of(index)}, which is not one of the converted "
                f"graph's {kind}s {names.list(graph_tensors)}; the payload header cannot map it to a delegate "
                f"argument. Report the TFLite to NXP, or lower with reference=True"
            )
        position = graph_tensors.index(index)
        if position in positions:
            raise ConvertedModelError(
                f"partition {name!r}: NeutronGraph {kind}s {positions.index(position)} and {k} are both "
                f"{names.of(index)}; each graph {kind} must appear once among the node's {kind}s"
            )
        positions.append(position)
    return tuple(positions)


def _parse(model_bytes: bytes, name: str) -> schema.ModelT:
    data = bytes(model_bytes)
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise ConvertedModelError(
            f"partition {name!r}: the converter returned {len(data)} bytes that are not a TFLite flatbuffer "
            f"(no TFL3 identifier)"
        )
    try:
        return read_model(data)
    except Exception as exc:  # noqa: BLE001 - any parse failure means a malformed flatbuffer
        raise ConvertedModelError(f"partition {name!r}: cannot parse the converted TFLite: {exc}") from exc


def _custom_code(model: schema.ModelT, op: schema.OperatorT, name: str) -> str:
    codes = model.operatorCodes or []
    if not 0 <= op.opcodeIndex < len(codes):
        raise ConvertedModelError(f"partition {name!r}: operator code index {op.opcodeIndex} is out of range")
    return opcode_name(codes[op.opcodeIndex])


def _constant(model: schema.ModelT, subgraph: schema.SubGraphT, raw: bytes, index: int, role: str, name: str,
              names: _Names) -> bytes:
    tensors = subgraph.tensors or []
    if not 0 <= index < len(tensors):
        raise ConvertedModelError(f"partition {name!r}: the {role} input refers to tensor {index}, which does not exist")
    buffers = model.buffers or []
    b = tensors[index].buffer
    if not 0 < b < len(buffers):
        raise ConvertedModelError(
            f"partition {name!r}: the NeutronGraph node's {role} operand, {names.of(index)}, is not a constant "
            f"buffer (buffer index {b}); the node must end with its microcode, weights and kernels operands"
        )
    buf = buffers[b]
    if buf.offset and buf.offset > 1:  # data stored after the flatbuffer (large models)
        if buf.offset + buf.size > len(raw):
            raise ConvertedModelError(f"partition {name!r}: the {role} buffer overruns the converted model")
        return bytes(raw[buf.offset:buf.offset + buf.size])
    return b"" if buf.data is None else np.asarray(buf.data, dtype=np.uint8).tobytes()


def _check_microcode(microcode: bytes, weights: bytes, name: str) -> None:
    if len(microcode) < _MIN_MICROCODE:
        raise ConvertedModelError(
            f"partition {name!r}: the microcode buffer has {len(microcode)} bytes, fewer than its 32-byte preamble"
        )
    words = struct.unpack_from("<8I", microcode, 0)
    if words[0] != MICROCODE_MAGIC:
        raise ConvertedModelError(
            f"partition {name!r}: microcode magic 0x{words[0]:08X} is not 0x{MICROCODE_MAGIC:08X}; the installed "
            f"eIQ Neutron SDK produces a microcode format this backend does not know"
        )
    if words[6] != len(microcode):
        raise ConvertedModelError(
            f"partition {name!r}: microcode word 6 says {words[6]} bytes but the buffer holds {len(microcode)}"
        )
    if words[7] != len(weights):
        raise ConvertedModelError(
            f"partition {name!r}: microcode word 7 says {words[7]} weight bytes but the weights buffer holds "
            f"{len(weights)}"
        )

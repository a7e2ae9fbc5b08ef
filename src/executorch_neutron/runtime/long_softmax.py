"""The host's form of an int8 SOFTMAX over 512 or more elements: LiteRT's reference kernel aborts on it.

LiteRT's int8 reference softmax (what the host runs, and the arithmetic the NPU follows) sums the row's
fixed-point exponentials, each at most 1.0, and divides by that sum with a shift that grows with it: once the sum
reaches 512 the shift is 32 and a `TFLITE_CHECK` ends the process (SIGABRT, no message). A classifier's softmax
over 1000 classes with close logits (random weights, an untrained head) gets there. The NPU has no such limit.

On the host only, such a SOFTMAX (int8 in and out, 512 or more elements along its axis: a row of fewer elements
cannot reach a sum of 512) runs as DEQUANTIZE -> float SOFTMAX -> QUANTIZE: the exactly rounded softmax of the
same int8 input. Where the fixed-point kernel has a result it is within one output step of that (its exponential
is a fixed-point approximation, then it rounds once); at a sum of 512 or more every probability is at most 1/512,
half an output step of the int8 softmax's 1/256 scale, so both give the zero point (or one step above it at an
exact half). The payload and what the SDK is given are unchanged; `host_form` rewrites the copy LiteRT loads.
"""

from __future__ import annotations

import functools
import logging
import math

import flatbuffers
from ai_edge_litert import schema_py_generated as schema

from ..tflite.builder import TFLITE_FILE_IDENTIFIER
from ..tflite.reader import builtin_code, read_model

log = logging.getLogger("executorch_neutron")

#: the row length from which LiteRT's int8 reference softmax can meet a sum of exponentials of 512
LONG_ROW = 512


def _long_int8_softmax(model: schema.ModelT, subgraph: schema.SubGraphT, op: schema.OperatorT) -> bool:
    if builtin_code(model.operatorCodes[op.opcodeIndex]) != schema.BuiltinOperator.SOFTMAX:
        return False
    src, dst = subgraph.tensors[op.inputs[0]], subgraph.tensors[op.outputs[0]]
    shape = [int(d) for d in src.shape] if src.shape is not None else []
    return (src.type == dst.type == schema.TensorType.INT8 and bool(shape) and shape[-1] >= LONG_ROW)


def _opcode(model: schema.ModelT, code: int) -> int:
    for i, opcode in enumerate(model.operatorCodes):
        if builtin_code(opcode) == code:
            return i
    opcode = schema.OperatorCodeT()
    opcode.builtinCode, opcode.deprecatedBuiltinCode, opcode.version = code, min(code, 127), 1
    model.operatorCodes.append(opcode)
    return len(model.operatorCodes) - 1


def _float_twin(model: schema.ModelT, subgraph: schema.SubGraphT, index: int, suffix: str) -> int:
    """A float32 tensor of the shape of `index`, with its own empty buffer; returns its index."""
    src = subgraph.tensors[index]
    twin = schema.TensorT()
    twin.shape, twin.type = list(src.shape), schema.TensorType.FLOAT32
    name = src.name.decode(errors="replace") if isinstance(src.name, (bytes, bytearray)) else str(src.name)
    twin.name = f"{name}/{suffix}"
    model.buffers.append(schema.BufferT())
    twin.buffer = len(model.buffers) - 1
    subgraph.tensors.append(twin)
    return len(subgraph.tensors) - 1


def _op(opcode: int, inputs: list[int], outputs: list[int], options_type: int = 0, options=None) -> schema.OperatorT:
    op = schema.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = opcode, inputs, outputs
    op.builtinOptionsType, op.builtinOptions = options_type, options
    return op


@functools.lru_cache(maxsize=64)
def host_form(tflite: bytes) -> bytes:
    """`tflite` with every long int8 SOFTMAX as DEQUANTIZE -> float SOFTMAX -> QUANTIZE (module docstring); the
    same bytes when it has none."""
    model = read_model(tflite)
    if not any(_long_int8_softmax(model, sg, op) for sg in model.subgraphs for op in sg.operators or ()):
        return tflite
    dequantize = _opcode(model, schema.BuiltinOperator.DEQUANTIZE)
    quantize = _opcode(model, schema.BuiltinOperator.QUANTIZE)
    for sg in model.subgraphs:
        ops = []
        for op in sg.operators or ():
            if not _long_int8_softmax(model, sg, op):
                ops.append(op)
                continue
            src, dst = op.inputs[0], op.outputs[0]
            src_f, dst_f = _float_twin(model, sg, src, "float"), _float_twin(model, sg, dst, "float")
            ops += [_op(dequantize, [src], [src_f]),
                    _op(op.opcodeIndex, [src_f], [dst_f], op.builtinOptionsType, op.builtinOptions),
                    _op(quantize, [dst_f], [dst])]
            log.debug("host run: int8 SOFTMAX over %d elements (%s) runs as float softmax rounded once: LiteRT's "
                      "int8 reference kernel aborts on rows of %d or more", math.prod(sg.tensors[src].shape[-1:]),
                      sg.tensors[dst].name, LONG_ROW)
        sg.operators = ops
    fb = flatbuffers.Builder(len(tflite) + 1024)
    fb.Finish(model.Pack(fb), file_identifier=TFLITE_FILE_IDENTIFIER)
    return bytes(fb.Output())

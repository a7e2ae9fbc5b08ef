"""Tiny LiteRT (TFLite) flatbuffers for the runtime tests, built with the schema object API.

Test-only: the project's real converter lives in `executorch_neutron.tflite`. These builders make a handful of
element-wise graphs (ADD, SUB, MUL, RELU, with optional constant operands) in float32 or int8 so that the host
runtime can be tested before, and independently of, the full lowering pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

_TYPES = {np.dtype(np.float32): schema.TensorType.FLOAT32, np.dtype(np.int8): schema.TensorType.INT8,
          np.dtype(np.int32): schema.TensorType.INT32, np.dtype(np.uint8): schema.TensorType.UINT8}
_OPS = {
    "add": (schema.BuiltinOperator.ADD, schema.BuiltinOptions.AddOptions, schema.AddOptionsT),
    "sub": (schema.BuiltinOperator.SUB, schema.BuiltinOptions.SubOptions, schema.SubOptionsT),
    "mul": (schema.BuiltinOperator.MUL, schema.BuiltinOptions.MulOptions, schema.MulOptionsT),
    "relu": (schema.BuiltinOperator.RELU, schema.BuiltinOptions.NONE, None),
}


@dataclass
class GraphBuilder:
    """Collects tensors and operators of one subgraph; `finish()` returns the flatbuffer bytes."""

    tensors: list = field(default_factory=list)
    buffers: list = field(default_factory=lambda: [schema.BufferT()])  # buffer 0: the empty sentinel
    operators: list = field(default_factory=list)
    opcodes: dict = field(default_factory=dict)

    def tensor(self, shape, dtype, name, data=None, scale=None, zero_point=0) -> int:
        t = schema.TensorT()
        t.shape = [int(s) for s in shape]
        t.type = _TYPES[np.dtype(dtype)]
        t.name = name
        t.buffer = 0
        if data is not None:
            buf = schema.BufferT()
            buf.data = np.ascontiguousarray(np.asarray(data, dtype=dtype)).tobytes()
            self.buffers.append(buf)
            t.buffer = len(self.buffers) - 1
        if scale is not None:
            q = schema.QuantizationParametersT()
            q.scale = [float(scale)]
            q.zeroPoint = [int(zero_point)]
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, kind: str, inputs, outputs) -> None:
        code, options_type, options_cls = _OPS[kind]
        if code not in self.opcodes:
            oc = schema.OperatorCodeT()
            oc.builtinCode = code
            oc.deprecatedBuiltinCode = min(code, 127)
            oc.version = 1
            self.opcodes[code] = (len(self.opcodes), oc)
        op = schema.OperatorT()
        op.opcodeIndex = self.opcodes[code][0]
        op.inputs = list(inputs)
        op.outputs = list(outputs)
        if options_cls is not None:
            op.builtinOptionsType = options_type
            op.builtinOptions = options_cls()
        self.operators.append(op)

    def finish(self, inputs, outputs) -> bytes:
        sg = schema.SubGraphT()
        sg.tensors = self.tensors
        sg.operators = self.operators
        sg.inputs = list(inputs)
        sg.outputs = list(outputs)
        sg.name = "main"
        model = schema.ModelT()
        model.version = 3
        model.description = "executorch-neutron test fixture"
        model.operatorCodes = [oc for _, oc in sorted(self.opcodes.values(), key=lambda p: p[0])]
        model.subgraphs = [sg]
        model.buffers = self.buffers
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def add_const_float(shape, const) -> bytes:
    """y = x + const (const broadcast on the trailing dims); one input, one output, float32."""
    g = GraphBuilder()
    x = g.tensor(shape, np.float32, "x")
    c = g.tensor(np.shape(const), np.float32, "c", data=const)
    y = g.tensor(shape, np.float32, "y")
    g.op("add", [x, c], [y])
    return g.finish([x], [y])


def two_in_two_out_float(shape) -> bytes:
    """(a + b, relu(a - b)); two inputs, two outputs, float32."""
    g = GraphBuilder()
    a, b = g.tensor(shape, np.float32, "a"), g.tensor(shape, np.float32, "b")
    s, d, r = (g.tensor(shape, np.float32, n) for n in ("sum", "diff", "relu"))
    g.op("add", [a, b], [s])
    g.op("sub", [a, b], [d])
    g.op("relu", [d], [r])
    return g.finish([a, b], [s, r])


def add_relu_int8(shape, scale=0.05, zero_point=-3) -> bytes:
    """relu(a + b) on int8 tensors that share one quantization; two inputs, one output."""
    g = GraphBuilder()
    a = g.tensor(shape, np.int8, "a", scale=scale, zero_point=zero_point)
    b = g.tensor(shape, np.int8, "b", scale=scale, zero_point=zero_point)
    s = g.tensor(shape, np.int8, "sum", scale=scale, zero_point=zero_point)
    r = g.tensor(shape, np.int8, "relu", scale=scale, zero_point=zero_point)
    g.op("add", [a, b], [s])
    g.op("relu", [s], [r])
    return g.finish([a, b], [r])


def run_litert(tflite: bytes, inputs) -> list[np.ndarray]:
    """Run a flatbuffer directly in LiteRT with reference kernels (what the host runtime must reproduce)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_content=tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), inputs):
        interp.set_tensor(detail["index"], np.ascontiguousarray(value))
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()]

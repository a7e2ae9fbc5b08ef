"""A small, deterministic TFLite flatbuffer writer on top of LiteRT's generated schema object API.

Tensors, buffers, operator codes and operators are appended in call order, so the same sequence of calls gives
byte-identical bytes. Buffer 0 is the mandatory empty buffer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from .layout import Layout

TFLITE_FILE_IDENTIFIER = b"TFL3"
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127

_NUMPY_TO_TFLITE = {
    np.dtype(np.int8): schema.TensorType.INT8,
    np.dtype(np.uint8): schema.TensorType.UINT8,
    np.dtype(np.int16): schema.TensorType.INT16,
    np.dtype(np.int32): schema.TensorType.INT32,
    np.dtype(np.int64): schema.TensorType.INT64,
    np.dtype(np.float32): schema.TensorType.FLOAT32,
}


_ACTIVATION_TYPES = (np.dtype(np.int8), np.dtype(np.int16))


@dataclass(frozen=True)
class Quant:
    """Affine quantization of a tensor: per-tensor (one scale) or per-channel along `axis`, and the integer type
    that stores it (`dtype`: int8; int16 for the activations of A16W8)."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int = 0
    dtype: str = "int8"

    @classmethod
    def per_tensor(cls, scale: float, zero_point: int, dtype: str = "int8") -> "Quant":
        return cls((float(scale),), (int(zero_point),), 0, dtype)

    @property
    def storage(self) -> np.dtype:
        """The numpy type of the tensor's values."""
        return np.dtype(self.dtype)

    @property
    def is_per_tensor(self) -> bool:
        return len(self.scale) == 1


@dataclass(frozen=True)
class Value:
    """An edge node's value in the flatbuffer: tensor index, logical (PyTorch) shape, physical layout, quantization
    (int8 or int16)."""

    tensor: int
    shape: tuple[int, ...]
    layout: Layout
    quant: Quant | None


class ModelBuilder:
    def __init__(self, description: str = "executorch-neutron") -> None:
        self._description = description
        self._tensors: list[schema.TensorT] = []
        self._buffers: list[schema.BufferT] = [schema.BufferT()]
        self._opcodes: list[tuple[int, str | None]] = []
        self._operators: list[schema.OperatorT] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.metadata: dict[str, bytes] = {}  # the model's named metadata buffers

    # tensors -----------------------------------------------------------------------------------------------
    def tensor(self, name: str, shape: Sequence[int], dtype, quant: Quant | None = None, data=None) -> int:
        """A tensor; a quantized activation asked for as int8 is stored in its quantization's type (int16 under
        A16W8), so converters name the int8 case only. A constant's data must already be of that type."""
        if quant is not None and np.dtype(dtype) in _ACTIVATION_TYPES and quant.storage in _ACTIVATION_TYPES:
            if data is not None and np.asarray(data).dtype != quant.storage:
                raise ValueError(f"constant {name}: {np.asarray(data).dtype} data quantized as {quant.dtype}")
            dtype = quant.storage
        t = schema.TensorT()
        t.name = name
        t.shape = [int(d) for d in shape]
        t.type = _NUMPY_TO_TFLITE[np.dtype(dtype)]
        if quant is not None:
            q = schema.QuantizationParametersT()
            q.scale = [float(s) for s in quant.scale]
            q.zeroPoint = [int(z) for z in quant.zero_point]
            q.quantizedDimension = int(quant.axis)
            t.quantization = q
        if data is not None:
            arr = np.array(data, dtype=dtype, order="C")
            if tuple(arr.shape) != tuple(t.shape):
                raise ValueError(f"constant {name}: data shape {arr.shape} != tensor shape {tuple(t.shape)}")
            buf = schema.BufferT()
            buf.data = np.frombuffer(arr.tobytes(), dtype=np.uint8)
            self._buffers.append(buf)
            t.buffer = len(self._buffers) - 1
        self._tensors.append(t)
        return len(self._tensors) - 1

    def constant(self, name: str, data: np.ndarray, quant: Quant | None = None) -> int:
        data = np.asarray(data)
        return self.tensor(name, data.shape, data.dtype, quant, data)

    def int32_vector(self, name: str, values: Sequence[int]) -> int:
        return self.constant(name, np.asarray(list(values), dtype=np.int32))

    def tensor_name(self, tensor: int) -> str:
        return self._tensors[tensor].name

    def shape_of(self, tensor: int) -> tuple[int, ...]:
        return tuple(self._tensors[tensor].shape)

    # operators ---------------------------------------------------------------------------------------------
    def _opcode_index(self, builtin: int, custom: str | None = None) -> int:
        key = (builtin, custom)
        if key not in self._opcodes:
            self._opcodes.append(key)
        return self._opcodes.index(key)

    def op(self, builtin: int, inputs: Sequence[int], outputs: Sequence[int], options=None) -> None:
        o = schema.OperatorT()
        o.opcodeIndex = self._opcode_index(builtin)
        o.inputs = [int(i) for i in inputs]
        o.outputs = [int(i) for i in outputs]
        if options is not None:
            name = type(options).__name__[: -len("T")]
            o.builtinOptionsType = getattr(schema.BuiltinOptions, name)
            o.builtinOptions = options
        self._operators.append(o)

    @property
    def num_operators(self) -> int:
        return len(self._operators)

    def build(self) -> bytes:
        sub = schema.SubGraphT()
        sub.tensors = self._tensors
        sub.inputs = list(self.inputs)
        sub.outputs = list(self.outputs)
        sub.operators = self._operators
        sub.name = "main"
        model = schema.ModelT()
        model.version = 3
        model.description = self._description
        model.buffers = list(self._buffers)
        model.subgraphs = [sub]
        for name, data in self.metadata.items():  # none: no metadata vector at all (the bytes stay as before)
            buf = schema.BufferT()
            buf.data = np.frombuffer(data, dtype=np.uint8)
            model.buffers.append(buf)
            entry = schema.MetadataT()
            entry.name, entry.buffer = name, len(model.buffers) - 1
            model.metadata = (model.metadata or []) + [entry]
        codes = []
        for builtin, custom in self._opcodes:
            c = schema.OperatorCodeT()
            c.builtinCode = builtin
            c.deprecatedBuiltinCode = min(builtin, _PLACEHOLDER_FOR_GREATER_OP_CODES)
            c.customCode = custom
            c.version = 1
            codes.append(c)
        model.operatorCodes = codes
        fb = flatbuffers.Builder(1024)
        fb.Finish(model.Pack(fb), file_identifier=TFLITE_FILE_IDENTIFIER)
        return bytes(fb.Output())


def options(cls_name: str, **fields):
    """Build a schema options object, e.g. options("Conv2DOptionsT", strideW=1, strideH=1)."""
    obj = getattr(schema, cls_name)()
    for key, value in fields.items():
        if not hasattr(obj, key):
            raise AttributeError(f"{cls_name} has no field {key!r}")
        setattr(obj, key, value)
    return obj

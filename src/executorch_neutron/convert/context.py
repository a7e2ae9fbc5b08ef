"""Conversion state for one partition: which TFLite tensor holds each edge node's value, in which layout.

q/dq nodes are not converted: a dequantize is an alias of its int8 input and a quantize gives its parameters to
the tensor of the op it follows. Converters ask for inputs in a layout (`value(node, Layout.CHANNELS_LAST)`) and
the context inserts the TRANSPOSE (or RESHAPE, when only size-1 dims move) the first time, then reuses it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from ai_edge_litert import schema_py_generated as schema
from torch.fx import Node

from ..core import qdq
from ..ops.fusion import result_node
from ..tflite.builder import ModelBuilder, Quant, Value, options
from ..tflite.layout import (Layout, collapsed_transpose, is_memory_preserving, physical_shape, to_physical_perm,
                             transpose_perm)


class ConversionError(RuntimeError):
    pass


@dataclass(frozen=True)
class QuantizedConstant:
    """An integer constant with its quantization (weights, biases) as numpy arrays in PyTorch order."""

    data: np.ndarray
    quant: Quant  # axis refers to PyTorch order


#: the integer types a partition's quantized tensors may have (activations int8 or int16, biases int32)
_STORAGE = {torch.int8: "int8", torch.int16: "int16", torch.int32: "int32"}


def quant_from(p: qdq.QParams) -> Quant:
    dtype = _STORAGE.get(p.dtype)
    if dtype is None:
        raise ConversionError(f"quantization to {p.dtype}: partitions hold int8 or int16 activations and int32 biases")
    if p.per_channel:
        return Quant(tuple(float(s) for s in p.scale.tolist()), tuple(int(z) for z in p.zero_point.tolist()), p.axis,
                     dtype)
    return Quant.per_tensor(p.scale, p.zero_point, dtype)


class ConversionContext:
    def __init__(self, builder: ModelBuilder, resolve_constant, check_ctx) -> None:
        self.builder = builder
        self._resolve = resolve_constant  # placeholder node -> torch.Tensor or None (user input)
        self.check_ctx = check_ctx
        self._values: dict[Node, Value] = {}
        self._relayout: dict[tuple[int, object], Value] = {}  # (tensor index, layout) -> that tensor relaid
        # tensor -> the logical rank-4 shape it is a channels-last flatten of, read only by FULLY_CONNECTEDs
        # (ops/shape.py binds it, ops/linear.py permutes its weight columns to match)
        self.channels_last_flattens: dict[int, tuple[int, ...]] = {}

    # values -------------------------------------------------------------------------------------------------
    def bind(self, node: Node, value: Value) -> None:
        self._values[node] = value

    def constant_tensor(self, node: Node) -> torch.Tensor | None:
        return self._resolve(node) if node.op in ("placeholder", "get_attr") else None

    def qparams(self, node: Node) -> qdq.QParams:
        return qdq.qparams(node, self._resolve)

    def value(self, node: Node, layout: Layout | None = None) -> Value:
        v = self._source_value(node)
        if layout is None or layout is v.layout or len(v.shape) != 4:
            return v
        key = (v.tensor, layout)  # per tensor, not per node: each reader has its own dequantize node
        if key not in self._relayout:
            self._relayout[key] = self._transposed(v, layout)
        return self._relayout[key]

    def value_at_rank(self, node: Node, rank: int, layout: Layout) -> Value:
        """`node`'s value with size-1 dims prepended up to `rank` (NumPy broadcasting), in `layout` (for an
        elementwise operand of lower rank than the result). A constant is stored reshaped; a computed value gets a
        RESHAPE, made once."""
        v = self._source_value(node)
        if len(v.shape) >= rank:
            return self.value(node, layout)
        key = (v.tensor, (rank, layout))
        if key not in self._relayout:
            shape = (1,) * (rank - len(v.shape)) + tuple(v.shape)
            if qdq.is_qdq(node) and self.constant_tensor(node.args[0]) is not None:
                c = self.quantized_constant(node)
                if not c.quant.is_per_tensor:
                    raise ConversionError(f"{node.name}: per-channel constant used as an activation operand")
                data = c.data.reshape(shape).astype(c.quant.storage)
                out = Value(self.builder.constant(f"{node.name}_rank{rank}", data, v.quant), shape, Layout.NATURAL,
                            v.quant)
            else:
                src = self.value(node, Layout.NATURAL)
                t = self.builder.tensor(f"t{src.tensor}_rank{rank}", shape, np.int8, v.quant)
                self.builder.op(schema.BuiltinOperator.RESHAPE, [src.tensor, self.builder.int32_vector(
                    f"t{src.tensor}_rank{rank}_shape", shape)], [t], options("ReshapeOptionsT", newShape=list(shape)))
                out = Value(t, shape, Layout.NATURAL, v.quant)
            if layout is not Layout.NATURAL and rank == 4:
                out = self._transposed(out, layout)
            self._relayout[key] = out
        return self._relayout[key]

    def _source_value(self, node: Node) -> Value:
        if node in self._values:
            return self._values[node]
        if qdq.is_qdq(node):
            src = node.args[0]
            if self.constant_tensor(src) is not None:
                value = self._constant_value(node)
            else:
                value = self._source_value(src)
                if qdq.is_q(node) and qdq.is_dq(src):
                    value = self._requantized(node, value)
            self._values[node] = value
            return value
        raise ConversionError(f"no TFLite value for node {node.name} ({node.op} {node.target})")

    def _requantized(self, q_node: Node, v: Value) -> Value:
        """A requantization inside the partition (dequantize -> quantize with other parameters): a TFLite QUANTIZE
        of the tensor to the new scale, zero point and type (int8 <-> int16 where int8 and int16 layers meet; the
        same tensor when nothing changes)."""
        p = self.qparams(q_node)
        if p.dtype not in (torch.int8, torch.int16):
            raise ConversionError(f"{q_node.name}: requantization to {p.dtype}; partitions compute int8 or int16")
        quant = quant_from(p)
        if quant == v.quant:
            return v
        out = self.builder.tensor(q_node.name, self.builder.shape_of(v.tensor), np.int8, quant)
        self.builder.op(schema.BuiltinOperator.QUANTIZE, [v.tensor], [out])
        return Value(out, v.shape, v.layout, quant)

    def _constant_value(self, dq_node: Node) -> Value:
        c = self.quantized_constant(dq_node)
        if not c.quant.is_per_tensor:
            raise ConversionError(f"{dq_node.name}: per-channel constant used as an activation operand")
        layout = Layout.preferred(c.data.ndim)
        data = np.transpose(c.data, to_physical_perm(c.data.ndim, layout)) if layout is Layout.CHANNELS_LAST else c.data
        t = self.builder.constant(dq_node.name, data.astype(c.quant.storage), c.quant)
        return Value(t, tuple(c.data.shape), layout, c.quant)

    def _transposed(self, v: Value, layout: Layout) -> Value:
        perm = transpose_perm(len(v.shape), v.layout, layout)
        src_phys = physical_shape(v.shape, v.layout)
        dst_phys = physical_shape(v.shape, layout)
        out = self.builder.tensor(f"t{v.tensor}_{layout.value}", dst_phys, np.int8, v.quant)
        if is_memory_preserving(src_phys, perm):
            shape = self.builder.int32_vector(f"t{v.tensor}_shape", dst_phys)
            self.builder.op(schema.BuiltinOperator.RESHAPE, [v.tensor, shape], [out],
                            options("ReshapeOptionsT", newShape=list(dst_phys)))
        elif self._collapses_transposes() and collapsed_transpose(src_phys, perm) is not None:
            shape3, perm3 = collapsed_transpose(src_phys, perm)
            src3 = self.builder.tensor(f"t{v.tensor}_rank3", shape3, np.int8, v.quant)
            self.builder.op(schema.BuiltinOperator.RESHAPE, [v.tensor, self.builder.int32_vector(
                f"t{v.tensor}_rank3_shape", shape3)], [src3], options("ReshapeOptionsT", newShape=list(shape3)))
            dst3 = tuple(shape3[i] for i in perm3)
            moved = self.builder.tensor(f"t{v.tensor}_rank3_{layout.value}", dst3, np.int8, v.quant)
            self.builder.op(schema.BuiltinOperator.TRANSPOSE, [src3, self.builder.int32_vector(
                f"t{v.tensor}_perm", perm3)], [moved], options("TransposeOptionsT"))
            self.builder.op(schema.BuiltinOperator.RESHAPE, [moved, self.builder.int32_vector(
                f"t{v.tensor}_shape", dst_phys)], [out], options("ReshapeOptionsT", newShape=list(dst_phys)))
        else:
            p = self.builder.int32_vector(f"t{v.tensor}_perm", perm)
            self.builder.op(schema.BuiltinOperator.TRANSPOSE, [v.tensor, p], [out], options("TransposeOptionsT"))
        return Value(out, v.shape, layout, v.quant)

    def _collapses_transposes(self) -> bool:
        """Whether the target writes layout transposes in rank 3 (`target.TRANSPOSE_FORMS`)."""
        return getattr(self.check_ctx.spec.target_info, "transpose_form", "4d") == "collapsed"

    # constants ----------------------------------------------------------------------------------------------
    def quantized_constant(self, node: Node) -> QuantizedConstant:
        """The integer data and quantization behind `dq(constant)`."""
        if not qdq.is_dq(node):
            raise ConversionError(f"{node.name} is not a dequantized constant")
        data = self.constant_tensor(node.args[0])
        if data is None:
            raise ConversionError(f"{node.name}: operand {node.args[0].name} is not a constant")
        return QuantizedConstant(data.detach().numpy().copy(), quant_from(self.qparams(node)))

    # outputs ------------------------------------------------------------------------------------------------
    def output_node(self, node: Node) -> Node:
        """The node whose quantize users carry this op's output parameters (its fused activation, if any)."""
        return result_node(node)

    def output_quant(self, node: Node) -> Quant:
        out = self.output_node(node)
        params = [self.qparams(u) for u in out.users if qdq.is_q(u)]
        if not params or len(params) != len(out.users):
            raise ConversionError(f"{out.name}: output is not quantized (int8 or int16) by a quantize node")
        if any(not p.same_as(params[0]) for p in params[1:]):
            raise ConversionError(f"{out.name}: output is quantized twice with different parameters")
        return quant_from(params[0])

    def emit_output(self, node: Node, layout: Layout, quant: Quant | None = None) -> Value:
        """Create the int8 (or, by its quantization, int16) tensor for `node`'s result (its logical shape from the graph) and bind it."""
        out = self.output_node(node)
        val = out.meta["val"]
        if isinstance(val, (tuple, list)):
            val = val[0]
        shape = tuple(int(d) for d in val.shape)
        quant = quant or self.output_quant(node)
        t = self.builder.tensor(out.name, physical_shape(shape, layout), np.int8, quant)
        value = Value(t, shape, layout, quant)
        self._values[node] = value
        self._values[out] = value
        return value


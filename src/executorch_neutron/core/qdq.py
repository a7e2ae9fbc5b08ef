"""Recognising the quantize/dequantize nodes PT2E leaves in an edge graph, and reading their parameters.

Shared by the partitioner (is this op fully int8?) and the converter (which TFLite quantization does a tensor get).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

from .exported import op_base_name

_qd = exir_ops.edge.quantized_decomposed
Q_PER_TENSOR = {_qd.quantize_per_tensor.default, _qd.quantize_per_tensor.tensor}
DQ_PER_TENSOR = {_qd.dequantize_per_tensor.default, _qd.dequantize_per_tensor.tensor}
Q_PER_CHANNEL = {_qd.quantize_per_channel.default}
DQ_PER_CHANNEL = {_qd.dequantize_per_channel.default}
QUANTIZE = Q_PER_TENSOR | Q_PER_CHANNEL
DEQUANTIZE = DQ_PER_TENSOR | DQ_PER_CHANNEL


# the ATen OpOverloads the edge ops wrap: decisions taken before decomposition (ops_to_not_decompose) see these
ATEN_QUANTIZE = {op._op for op in QUANTIZE}
ATEN_DEQUANTIZE = {op._op for op in DEQUANTIZE}
_DQ_PER_TENSOR_ANY = DQ_PER_TENSOR | {op._op for op in DQ_PER_TENSOR}


def _calls(node, targets) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node.target in targets


def is_q(node) -> bool:
    """A quantize node (per tensor or per channel), in the edge dialect or in ATen."""
    return _calls(node, QUANTIZE) or _calls(node, ATEN_QUANTIZE)


def is_dq(node) -> bool:
    """A dequantize node (per tensor or per channel), in the edge dialect or in ATen."""
    return _calls(node, DEQUANTIZE) or _calls(node, ATEN_DEQUANTIZE)


def is_dq_per_tensor(node) -> bool:
    return _calls(node, _DQ_PER_TENSOR_ANY)


def is_qdq(node) -> bool:
    return is_q(node) or is_dq(node)


def per_tensor_kind(node) -> str | None:
    """'q' / 'dq' for a per-tensor quantize / dequantize node in any dialect (ATen, edge, or the out variants
    to_executorch leaves), else None. Its input, scale and zero point are args 0, 1 and 2 in each of them."""
    if not isinstance(node, Node) or node.op != "call_function":
        return None
    return {"quantize_per_tensor": "q", "dequantize_per_tensor": "dq"}.get(op_base_name(node.target))


#: LiteRT's int8 LOGISTIC and SOFTMAX outputs: scale 1/256, zero point -128 (range [0, 1)).
SIGMOID_SOFTMAX_QPARAMS = (1.0 / 256.0, -128)
#: LiteRT's int8 TANH output: scale 1/128, zero point 0 (range [-1, 1)).
TANH_QPARAMS = (1.0 / 128.0, 0)
#: LiteRT's int16 LOGISTIC, TANH and SOFTMAX outputs: scale 1/32768, zero point 0.
FIXED_QPARAMS_INT16 = (1.0 / 32768.0, 0)


@dataclass(frozen=True)
class QParams:
    """Per-tensor (scale/zero_point floats) or per-channel (tensors + axis) affine parameters."""

    scale: float | torch.Tensor
    zero_point: int | torch.Tensor
    qmin: int
    qmax: int
    dtype: torch.dtype
    axis: int | None = None

    @property
    def per_channel(self) -> bool:
        return self.axis is not None

    def same_as(self, other: "QParams", rtol: float = 1e-6) -> bool:
        if self.per_channel or other.per_channel:
            return False
        return (
            abs(self.scale - other.scale) <= rtol * max(abs(self.scale), 1e-30)
            and self.zero_point == other.zero_point
            and self.dtype == other.dtype
        )


def qparams(node: Node, resolve=None) -> QParams:
    """Parameters of a q/dq node. `resolve(node)` turns a placeholder (per-channel scales) into a tensor."""
    args = node.args
    if node.target in Q_PER_CHANNEL | DQ_PER_CHANNEL:
        if resolve is None:
            raise ValueError("per-channel parameters need a constant resolver")
        scale, zp = resolve(args[1]), resolve(args[2])
        return QParams(scale, zp, int(args[4]), int(args[5]), args[6], axis=int(args[3]))
    scale, zp = args[1], args[2]
    if isinstance(scale, Node) or isinstance(zp, Node):
        if resolve is None:
            raise ValueError("tensor-valued quantization parameters need a constant resolver")
        scale, zp = resolve(scale), resolve(zp)
    return QParams(float(scale), int(zp), int(args[3]), int(args[4]), args[5])

"""Helpers shared by op families: common constraints, int8 checks, bias quantization, padding choice."""

from __future__ import annotations

import math

import numpy as np

from ..core import qdq
from ..core.qdq import is_dq, is_dq_per_tensor, is_q  # noqa: F401 - the op families import them from here
from .fusion import result_node
from .registry import Constraint


def is_int8_constant(node, ctx) -> bool:
    """dequantize(constant integer tensor): a weight the converter can bake into the flatbuffer."""
    if not is_dq(node) or not ctx.is_constant(node.args[0]):
        return False
    val = node.args[0].meta.get("val")
    return val is not None and not val.dtype.is_floating_point


def bias_storage(x_quant) -> np.dtype:
    """A convolution's or fully connected layer's bias type: int32 for int8 inputs, int64 for int16 (TFLite's 16x8
    kernels)."""
    return np.dtype(np.int64) if x_quant.dtype == "int16" else np.dtype(np.int32)


def quantize_bias(bias, in_scale: float, w_scales, ctx, n_out: int, storage=np.int32) -> np.ndarray:
    """Bias (int32, or `storage`) with scale in_scale * w_scale[c]; from a dq(int32) constant, a float constant or
    None."""
    w_scales = np.asarray(w_scales, dtype=np.float64)
    if w_scales.size == 1:
        w_scales = np.full(n_out, float(w_scales[0]))
    scales = in_scale * w_scales
    if bias is None:
        return np.zeros(n_out, dtype=storage), scales
    if qdq.is_dq(bias):
        c = ctx.quantized_constant(bias)
        if c.data.dtype == np.int32 and np.allclose(np.asarray(c.quant.scale) * np.ones(n_out), scales, rtol=1e-5):
            return c.data.astype(storage), scales
        real = (c.data.astype(np.float64) - np.asarray(c.quant.zero_point)) * np.asarray(c.quant.scale)
    else:
        t = ctx.constant_tensor(bias)
        if t is None:
            raise ValueError(f"bias {bias.name} is not a constant")
        real = t.detach().double().numpy()
    q = np.round(real / scales)
    info = np.iinfo(storage)
    return np.clip(q, info.min, info.max).astype(storage), scales


def same_padding_matches(in_size: int, k: int, stride: int, dilation: int, pad: int) -> bool:
    """Whether TFLite SAME padding computes exactly PyTorch's symmetric `pad`."""
    eff = (k - 1) * dilation + 1
    torch_out = (in_size + 2 * pad - eff) // stride + 1
    same_out = math.ceil(in_size / stride)
    total = max((same_out - 1) * stride + eff - in_size, 0)
    return torch_out == same_out and total // 2 == pad


def shared_quantization() -> Constraint:
    def check(a, ctx):
        first = a.node.all_input_nodes[0]
        users = [u for u in result_node(a.node).users if is_q(u)]
        if not (is_dq(first) and users):
            return None  # reported by the generic int8 check
        pin, pout = qdq.qparams(first), qdq.qparams(users[0])
        if not pin.same_as(pout):
            return (f"input quantization ({pin.scale:.6g}, {pin.zero_point}), output "
                    f"({pout.scale:.6g}, {pout.zero_point})")
        return None

    return Constraint("equal input and output quantization (LiteRT's int8 kernel needs them equal)", check)



"""aten.linear / addmm / mm -> TFLite FULLY_CONNECTED (constant weights) or BATCH_MATMUL (two activations).

`aten.linear` is kept from decomposition by the partitioner (so weights stay one constant); addmm/mm appear when
a model calls them directly.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema
import torch
from executorch.exir.dialects._ops import ops as exir_ops

from ..core import qdq
from ..tflite.builder import Quant, options
from ..tflite.layout import Layout, channels_last_flatten_columns
from .common import bias_storage, is_int8_constant, quantize_bias
from .fusion import fused_code
from .registry import constraint, register

_aten = exir_ops.edge.aten
A = torch.ops.aten


@constraint("constant int8 weights")
def _linear_weights(a, ctx):
    return None if is_int8_constant(a["weight"], ctx) else "weights are not a constant int8 tensor"


@constraint("2D tensors only")
def _two_d(a, ctx):
    lhs = "mat1" if "mat1" in a else "self"  # addmm's self is the bias
    ranks = (len(a.shape(lhs)), len(a.shape("mat2")))
    return None if ranks == (2, 2) else f"ranks {ranks}"


@constraint("constant second operand quantized per tensor or per output column")
def _mat2_quant(a, ctx):
    m = a["mat2"]
    if is_int8_constant(m, ctx) and m.target in qdq.DQ_PER_CHANNEL and int(m.args[3]) != 1:
        return "weights quantized per channel along the input dimension"
    return None


def _fully_connected(ctx, node, x, weight_oi: np.ndarray, w_quant: Quant, bias_node):
    """Emit FULLY_CONNECTED for x[..., in] @ weight_oi[out, in].T + bias."""
    b = ctx.builder
    out_f = weight_oi.shape[0]
    wt = b.constant(node.name + "_w", weight_oi.astype(np.int8), Quant(w_quant.scale, w_quant.zero_point, 0))
    bias, scales = quantize_bias(bias_node, x.quant.scale[0], w_quant.scale, ctx, out_f, bias_storage(x.quant))
    bt = b.constant(node.name + "_b", bias, Quant(tuple(scales), (0,) * out_f, 0))
    out = ctx.emit_output(node, Layout.NATURAL)
    opts = options("FullyConnectedOptionsT", fusedActivationFunction=fused_code(node),
                   keepNumDims=len(x.shape) > 2)
    b.op(schema.BuiltinOperator.FULLY_CONNECTED, [x.tensor, wt, bt], [out.tensor], opts)


@register(_aten.linear.default, constraints=(_linear_weights,), fuses_activation=True, preserve="always",
          quantize={"weighted": (A.linear.default,)}, int16=True,
          # a rank-1 input (after functionalization, e.g. an in-place squeeze_ of an LSTM's initial state) is
          # decomposed: ExecuTorch's portable linear.out refuses rank 1 (passes/linear_rank1_to_rank2.py handles the
          # rank-1 linears the exported graph shows)
          preserve_when=lambda a: len(a.shape("input")) >= 2)
def convert_linear(ctx, a):
    """y = x W^T + b over the last dimension, optional fused relu/relu6/hardtanh/clamp."""
    x = ctx.value(a["input"], Layout.NATURAL)
    w = ctx.quantized_constant(a["weight"])
    flattened = ctx.channels_last_flattens.get(x.tensor)  # a channels-last flatten (ops/shape.py): its column order
    weight = w.data if flattened is None else w.data[:, list(channels_last_flatten_columns(flattened))]
    _fully_connected(ctx, a.node, x, weight, w.quant, a["bias"])


def _matmul(ctx, a, bias_node):
    x = ctx.value(a["mat1"] if "mat1" in a else a["self"], Layout.NATURAL)
    if is_int8_constant(a["mat2"], ctx.check_ctx):
        w = ctx.quantized_constant(a["mat2"])
        quant = Quant(w.quant.scale, w.quant.zero_point, 0)
        _fully_connected(ctx, a.node, x, w.data.T, quant, bias_node)
        return
    if bias_node is not None:
        raise ValueError("addmm with a non-constant second operand is not supported")
    y = ctx.value(a["mat2"], Layout.NATURAL)
    out = ctx.emit_output(a.node, Layout.NATURAL)
    ctx.builder.op(schema.BuiltinOperator.BATCH_MATMUL, [x.tensor, y.tensor], [out.tensor],
                   options("BatchMatMulOptionsT"))


@register(_aten.mm.default, constraints=(_two_d, _mat2_quant), fuses_activation=True,
          quantize={"matmul": (A.mm.default,)})
def convert_mm(ctx, a):
    """Matrix product of two 2D tensors."""
    _matmul(ctx, a, None)


@constraint("constant second operand when a bias is added")
def _addmm_const(a, ctx):
    return None if is_int8_constant(a["mat2"], ctx) else "addmm with a non-constant second operand"


@constraint("beta 1 and alpha 1")
def _addmm_scalars(a, ctx):
    return None if (a["beta"], a["alpha"]) == (1, 1) else f"beta {a['beta']}, alpha {a['alpha']}"


@register(_aten.addmm.default, constraints=(_two_d, _mat2_quant, _addmm_const, _addmm_scalars), fuses_activation=True,
          quantize={"matmul": (A.addmm.default,)}, int16=True)
def convert_addmm(ctx, a):
    """bias + mat1 @ mat2 with a constant mat2 (a linear layer)."""
    _matmul(ctx, a, a["self"])


@constraint("3D tensors only")
def _three_d(a, ctx):
    ranks = (len(a.shape("self")), len(a.shape("mat2")))
    return None if ranks == (3, 3) else f"ranks {ranks}"


@register(_aten.bmm.default, constraints=(_three_d,), quantize={"own_output2": (A.bmm.default,)})
def convert_bmm(ctx, a):
    """Batched matrix product of two int8 tensors [B, N, M] @ [B, M, P]."""
    x = ctx.value(a["self"], Layout.NATURAL)
    y = ctx.value(a["mat2"], Layout.NATURAL)
    out = ctx.emit_output(a.node, Layout.NATURAL)
    ctx.builder.op(schema.BuiltinOperator.BATCH_MATMUL, [x.tensor, y.tensor], [out.tensor],
                   options("BatchMatMulOptionsT"))

"""Graph passes that feed the Neutron operator table; one pass per module.

`run_aten_passes` is what `NeutronQuantizer.transform_for_annotation` calls: rewrites that change which ops get
quantized run at ATen level, before annotation, so the native flow needs no extra arguments. Batch norm is not
fused here: `prepare_pt2e` folds conv+bn itself (and rewrites it for QAT) and the quantizer folds linear+bn
(`quantizer/fold_linear_batch_norm.py`) in the same hook.
"""

from __future__ import annotations

from torch.fx import GraphModule

from .batch_norm_to_conv import batch_norm_to_conv
from .conv1d_to_conv2d import conv1d_to_conv2d
from .div_to_mul import div_to_mul
from .fold_constants import fold_constants
from .gelu_to_sigmoid import gelu_to_sigmoid
from .hardsigmoid_to_conv import hardsigmoid_to_conv
from .inline_autocast import inline_autocast
from .layer_norm_decompose import layer_norm_decompose
from .matmul_to_bmm import matmul_to_bmm
from .max_pool_padding import max_pool_padding
from .mean1d_to_mean2d import mean1d_to_mean2d
from .permute_rank4 import permute_rank4
from .pool1d_to_pool2d import pool1d_to_pool2d
from .remove_bn_counters import remove_bn_counters
from .remove_noops import remove_noops
from .rnn_unroll import rnn_unroll
from .sdpa_to_matmul import sdpa_to_matmul
from .silu_to_sigmoid_mul import silu_to_sigmoid_mul
from .sink_batch_reshapes import sink_batch_reshapes
from .split_to_slices import split_to_slices
from .sum_all_keepdim import sum_all_keepdim

ATEN_PASSES = (inline_autocast, remove_noops, fold_constants, rnn_unroll, split_to_slices, sdpa_to_matmul, matmul_to_bmm,
               sink_batch_reshapes, permute_rank4, remove_bn_counters, batch_norm_to_conv, conv1d_to_conv2d, pool1d_to_pool2d, mean1d_to_mean2d,
               div_to_mul, hardsigmoid_to_conv, silu_to_sigmoid_mul, gelu_to_sigmoid, layer_norm_decompose,
               max_pool_padding, sum_all_keepdim)


def run_aten_passes(gm: GraphModule, is_qat: bool = False, skip=()) -> GraphModule:
    """`is_qat`: the parameters are trained after the passes, so computations on them are not folded; `skip`:
    passes not to run (a rewrite into ops the target's operator table does not have)."""
    for p in ATEN_PASSES:
        if p in skip:
            continue
        gm = fold_constants(gm, keep_parameters=is_qat) if p is fold_constants else p(gm)
    return gm


__all__ = ["ATEN_PASSES", "run_aten_passes", "batch_norm_to_conv", "conv1d_to_conv2d", "div_to_mul", "fold_constants",
           "gelu_to_sigmoid", "hardsigmoid_to_conv", "inline_autocast", "layer_norm_decompose", "matmul_to_bmm",
           "max_pool_padding", "silu_to_sigmoid_mul", "mean1d_to_mean2d", "permute_rank4", "pool1d_to_pool2d",
           "remove_bn_counters", "remove_noops", "rnn_unroll", "sdpa_to_matmul", "sink_batch_reshapes", "split_to_slices",
           "sum_all_keepdim"]

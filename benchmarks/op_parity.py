"""Operator parity with NXP's current release: per single-operator case, our verdict under the default profile
(`sdk-current`) against what NXP's release delegates (prints, never asserts).

    PYTHONPATH=src .venv/bin/python benchmarks/op_parity.py [--cases add_nc11 softmax4_last ...] [--steps] [--verbose] [--write-docs]

The expectation column is hand-written from the support checks of NXP's converters in the executorch 1.5.1
wheel (`executorch/backends/nxp/backend/ir/converter/node_converters/ops_converters/<file>`:
`_is_supported_in_IR`, `_is_supported_on_target`, `NodeConverter.inputs_satisfy_broadcast_condition`, and the
channels-first format some converters require); each row names its file. NXP's code is read for facts only, never
imported. Each case is one operator as a new user writes it, lowered with `lower()` defaults (int8, calibrated on
random data). Our verdict is "NPU" when every compute node is delegated (a view or clone left on the CPU moves no
data and does not count), else "CPU" with the first reason.
Counted: cases NXP delegates that we leave on the CPU (parity gaps), and cases we delegate beyond NXP. With
--steps, every case both delegate is also run: its TFLite in LiteRT and its .pte on the host runtime against
PyTorch's quantized model, worst error in output steps over 5 samples.

The table covers every support branch of the 43 converter files, each accepted one with the largest accepted
value where the branch has a limit, and the first refused value; plus what NXP's quantizer patterns
(`quantizer/patterns.py`: an op no pattern quantizes stays float, so on the CPU) and its ATen passes
(`aten_passes/`: scalar operands become constants, division by a constant a mul, split becomes slices, conv1d and
rank-3 pools become 2-D, grouped convs are split, batch norm and a constant add fold into conv/linear) make of
what a user writes. NXP's flow is read as its test pipeline runs it (`tests/executorch_pipeline.py`: strict
export, NeutronQuantizer, preserve_ops prelu / pad / hardswish, imxrt700).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from executorch_neutron import lower  # noqa: E402
from executorch_neutron.core.exported import op_name  # noqa: E402
from executorch_neutron.ops.registry import entries  # noqa: E402
from executorch_neutron.models.zoo import calibration  # noqa: E402
from harness import Fn, Param, lower_and_run, model_output_qparams, quantize_np, steps  # noqa: E402


def f(fn, *mods):
    return lambda: Fn(fn, *mods)


def m(module):
    return lambda: module


R = "randn"
P = "positive"  # (0.05, 3.05): rsqrt and log

# name: (model factory, input shapes, input kind, NXP delegates?, NXP converter file, note)
CASES = {
    # abs_converter.py: int8 in and out, any rank
    "abs": (f(lambda s, a: torch.abs(a)), [(1, 8, 5, 6)], R, True, "abs_converter.py", ""),
    "abs_rank2": (f(lambda s, a: torch.abs(a)), [(3, 40)], R, True, "abs_converter.py", ""),
    # adaptive_avg_pool_2d_converter.py: output size divides the input, equivalent kernel and stride <= 4096,
    # shared qparams; a rank-3 input gets a batch dim (aten_passes/add_batch_size_for_3d_input_pool_2d_ops.py)
    "adaptive_1x1": (m(nn.AdaptiveAvgPool2d(1)), [(1, 8, 6, 9)], R, True, "adaptive_avg_pool_2d_converter.py", ""),
    "adaptive_2x3": (m(nn.AdaptiveAvgPool2d((2, 3))), [(1, 8, 6, 9)], R, True, "adaptive_avg_pool_2d_converter.py",
                     ""),
    "adaptive_rank3": (m(nn.AdaptiveAvgPool2d(1)), [(8, 6, 9)], R, True, "adaptive_avg_pool_2d_converter.py",
                       "AddBatchSizeFor3DInputPool2DOps"),
    "adaptive_2x3_rank3": (m(nn.AdaptiveAvgPool2d((2, 3))), [(8, 6, 9)], R, True,
                           "adaptive_avg_pool_2d_converter.py", "AddBatchSizeFor3DInputPool2DOps"),
    "adaptive_k4096": (m(nn.AdaptiveAvgPool2d(1)), [(1, 2, 1, 4096)], R, True, "adaptive_avg_pool_2d_converter.py",
                       "kernel 4096: the largest accepted"),
    "adaptive_k4097": (m(nn.AdaptiveAvgPool2d(1)), [(1, 2, 1, 4097)], R, False,
                       "adaptive_avg_pool_2d_converter.py", "kernel 4097 > 4096"),
    "adaptive_4x4_of_6x9": (m(nn.AdaptiveAvgPool2d((4, 4))), [(1, 8, 6, 9)], R, False,
                            "adaptive_avg_pool_2d_converter.py", "output size does not divide the input"),
    "adaptive_identity": (m(nn.AdaptiveAvgPool2d((6, 9))), [(1, 8, 6, 9)], R, False,
                          "adaptive_avg_pool_2d_converter.py", "a no-op alone in its partition (is_no_op_on_neutron)"),
    # add_tensor_converter.py / sub_tensor_converter.py / mul_tensor_converter.py / maximum_converter.py /
    # minimum_converter.py: int8 operands, one input with the output's element count
    # (inputs_satisfy_broadcast_condition), add/sub alpha 1; a Python scalar becomes a quantized constant
    # (aten_passes/convert_scalar_to_attr.py), division by a constant a mul (convert_div_to_mul.py)
    "add_same": (f(lambda s, a, b: a + b), [(1, 8, 5, 6)] * 2, R, True, "add_tensor_converter.py", ""),
    "add_self": (f(lambda s, a: a + a), [(1, 8, 5, 6)], R, True, "add_tensor_converter.py", ""),
    "add_nc11": (f(lambda s, a, b: a + b), [(1, 16, 8, 8), (1, 16, 1, 1)], R, True, "add_tensor_converter.py", ""),
    "add_11hw_first": (f(lambda s, a, b: a + b), [(1, 1, 5, 7), (1, 8, 5, 7)], R, True, "add_tensor_converter.py",
                       "the broadcast operand first"),
    "add_rank1": (f(lambda s, a, b: a + b), [(1, 8, 32), (32,)], R, True, "add_tensor_converter.py", ""),
    "add_rank2_bc": (f(lambda s, a, b: a + b), [(6, 24), (1, 24)], R, True, "add_tensor_converter.py", ""),
    "add_rank5": (f(lambda s, a, b: a + b), [(1, 2, 3, 4, 5)] * 2, R, True, "add_tensor_converter.py", "no rank rule"),
    "add_param32": (lambda: Param(torch.add, 32), [(1, 6, 32)], R, True, "add_tensor_converter.py", ""),
    "add_scalar": (f(lambda s, a: a + 1.0), [(1, 8, 5, 6)], R, True, "add_tensor_converter.py",
                   "ConvertScalarToAttrPass: the scalar becomes a quantized constant"),
    "add_both_broadcast": (f(lambda s, a, b: a + b), [(1, 8, 1), (1, 1, 32)], R, False, "add_tensor_converter.py",
                           "neither input has the output's size"),
    "add_alpha2": (f(lambda s, a, b: torch.add(a, b, alpha=2)), [(1, 8, 5, 6)] * 2, R, False,
                   "add_tensor_converter.py", "alpha != 1"),
    "sub_same": (f(lambda s, a, b: a - b), [(1, 8, 5, 6)] * 2, R, True, "sub_tensor_converter.py", ""),
    "sub_t1": (f(lambda s, a, b: a - b), [(1, 6, 32), (1, 6, 1)], R, True, "sub_tensor_converter.py", ""),
    "sub_nc11": (f(lambda s, a, b: a - b), [(1, 16, 4, 4), (1, 16, 1, 1)], R, True, "sub_tensor_converter.py", ""),
    "sub_rank2_of_rank3": (f(lambda s, a, b: a - b), [(2, 5, 24), (5, 24)], R, True, "sub_tensor_converter.py", ""),
    "sub_first_broadcast": (f(lambda s, a, b: a - b), [(1, 1, 24), (2, 5, 24)], R, True, "sub_tensor_converter.py",
                            "the minuend broadcasts"),
    "sub_scalar": (f(lambda s, a: a - 0.5), [(1, 8, 5, 6)], R, True, "sub_tensor_converter.py",
                   "ConvertScalarToAttrPass"),
    "sub_scalar_first": (f(lambda s, a: 2.0 - a), [(1, 12, 3, 5)], R, False, "sub_tensor_converter.py",
                         "exported as aten.rsub.Scalar: no NXP quantizer pattern"),
    "sub_alpha2": (f(lambda s, a, b: torch.sub(a, b, alpha=2)), [(1, 8, 5, 6)] * 2, R, False,
                   "sub_tensor_converter.py", "alpha != 1"),
    "sub_both_broadcast": (f(lambda s, a, b: a - b), [(1, 6, 1), (1, 1, 24)], R, False, "sub_tensor_converter.py",
                           ""),
    "mul_size_105": (f(lambda s, a, b: a * b), [(1, 3, 5, 7)] * 2, R, True, "mul_tensor_converter.py", ""),
    "mul_self": (f(lambda s, a: a * a), [(1, 8, 5, 6)], R, True, "mul_tensor_converter.py", ""),
    "mul_nc11": (f(lambda s, a, b: a * b), [(1, 16, 6, 9), (1, 16, 1, 1)], R, True, "mul_tensor_converter.py", ""),
    "mul_n1hw": (f(lambda s, a, b: a * b), [(1, 16, 6, 9), (1, 1, 6, 9)], R, True, "mul_tensor_converter.py", ""),
    "mul_rank3_by_rank1": (f(lambda s, a, b: a * b), [(1, 8, 32), (32,)], R, True, "mul_tensor_converter.py", ""),
    "mul_rank3_by_rank4": (f(lambda s, a, b: a * b), [(3, 5, 7), (4, 3, 5, 7)], R, True, "mul_tensor_converter.py",
                           "the rank-4 operand has the output's size"),
    "mul_param32": (lambda: Param(torch.mul, 32), [(1, 6, 32)], R, True, "mul_tensor_converter.py", ""),
    "mul_scalar": (f(lambda s, a: a * 2.0), [(1, 8, 5, 6)], R, True, "mul_tensor_converter.py",
                   "ConvertScalarToAttrPass"),
    "swish_manual": (f(lambda s, a: a * torch.sigmoid(a)), [(1, 8, 5, 6)], R, True, "mul_tensor_converter.py",
                     "x * sigmoid(x)"),
    "div_scalar": (f(lambda s, a: a / 4.0), [(1, 8, 5, 6)], R, True, "mul_tensor_converter.py",
                   "ConvertDivToMulPass"),
    "div_param": (lambda: Param(torch.div, 32), [(1, 6, 32)], R, True, "mul_tensor_converter.py",
                  "ConvertDivToMulPass: a constant divisor"),
    "div_tensor": (f(lambda s, a, b: a / b), [(1, 8, 5, 6), (1, 8, 5, 6)], P, False, "mul_tensor_converter.py",
                   "a dynamic divisor: no div converter"),
    "mul_both_broadcast": (f(lambda s, a, b: a * b), [(1, 8, 1, 5), (1, 1, 6, 1)], R, False,
                           "mul_tensor_converter.py", ""),
    "maximum_same": (f(lambda s, a, b: torch.maximum(a, b)), [(1, 8, 5, 6)] * 2, R, True, "maximum_converter.py",
                     ""),
    "maximum_bc": (f(lambda s, a, b: torch.maximum(a, b)), [(1, 8, 5, 6), (1, 8, 1, 1)], R, True,
                   "maximum_converter.py", ""),
    "maximum_first_broadcast": (f(lambda s, a, b: torch.maximum(a, b)), [(1, 8, 1, 1), (1, 8, 5, 6)], R, True,
                                "maximum_converter.py", ""),
    "maximum_both_broadcast": (f(lambda s, a, b: torch.maximum(a, b)), [(1, 8, 1), (1, 1, 6)], R, False,
                               "maximum_converter.py", ""),
    "minimum_same": (f(lambda s, a, b: torch.minimum(a, b)), [(2, 24)] * 2, R, True, "minimum_converter.py", ""),
    "minimum_rank1": (f(lambda s, a, b: torch.minimum(a, b)), [(1, 5, 40), (40,)], R, True, "minimum_converter.py",
                      ""),
    # addmm_converter.py / mm_converter.py: 2-D static int8 weight, int32 bias of shape [p] or [1, p], alpha and
    # beta 1; a linear without bias is mm; a constant added after a bias-less linear becomes its bias
    # (aten_passes/fuse_linear_and_add_pass.py), a batch norm after it is folded (fuse_batch_norm_with_linear_pass)
    "linear": (m(nn.Linear(16, 8)), [(5, 16)], R, True, "addmm_converter.py", ""),
    "linear_batch1": (m(nn.Linear(64, 10)), [(1, 64)], R, True, "addmm_converter.py", ""),
    "linear_rank3": (m(nn.Linear(16, 8)), [(1, 5, 16)], R, True, "addmm_converter.py", "view, addmm, view"),
    "linear_rank4": (m(nn.Linear(16, 8)), [(1, 2, 3, 16)], R, True, "addmm_converter.py", ""),
    "linear_batch2_rank3": (m(nn.Linear(16, 8)), [(2, 5, 16)], R, True, "addmm_converter.py", ""),
    "linear_nobias": (m(nn.Linear(16, 8, bias=False)), [(5, 16)], R, True, "mm_converter.py", ""),
    "linear_plus_param": (f(lambda s, a: s.mods[1](s.mods[0](a)), nn.Linear(16, 8, bias=False), Param(torch.add, 8)),
                          [(5, 16)], R, True, "addmm_converter.py", "FuseLinearAndAddPass"),
    "linear_bn": (f(lambda s, a: s.mods[1](s.mods[0](a)), nn.Linear(16, 8), nn.BatchNorm1d(8)), [(5, 16)], R, True,
                  "addmm_converter.py", "FuseBatchNormWithLinearPass"),
    "mm_param": (lambda: Param(torch.mm, 16, 8), [(5, 16)], R, True, "mm_converter.py", "a constant operand"),
    "mm_dynamic": (f(lambda s, a, b: torch.mm(a, b)), [(5, 16), (16, 8)], R, False, "mm_converter.py",
                   "the second operand is not a static weight"),
    # amax_converter.py / amin_converter.py / mean_dim_converter.py / sum_dim_int_list_converter.py: int8, shared
    # qparams; mean: not alone in its partition when keepdim and every reduced dim has size 1
    "amax_last": (f(lambda s, a: torch.amax(a, -1, keepdim=True)), [(1, 6, 32)], R, True, "amax_converter.py", ""),
    "amax_channels": (f(lambda s, a: torch.amax(a, 1)), [(1, 8, 5, 6)], R, True, "amax_converter.py", ""),
    "amax_two_dims": (f(lambda s, a: torch.amax(a, (1, 2))), [(2, 6, 5, 4)], R, True, "amax_converter.py", ""),
    "amin_last": (f(lambda s, a: torch.amin(a, -1)), [(2, 5, 24)], R, True, "amin_converter.py", ""),
    "amin_hw_keepdim": (f(lambda s, a: torch.amin(a, (2, 3), keepdim=True)), [(1, 16, 7, 3)], R, True,
                        "amin_converter.py", ""),
    "mean_hw": (f(lambda s, a: a.mean((2, 3), keepdim=True)), [(1, 8, 5, 6)], R, True, "mean_dim_converter.py", ""),
    "mean_hw_nokeep": (f(lambda s, a: a.mean((2, 3))), [(1, 12, 5, 6)], R, True, "mean_dim_converter.py", ""),
    "mean_last_rank3": (f(lambda s, a: a.mean(-1, keepdim=True)), [(1, 6, 32)], R, True, "mean_dim_converter.py",
                        ""),
    "mean_last": (f(lambda s, a: a.mean(-1)), [(1, 5, 24)], R, True, "mean_dim_converter.py", ""),
    "mean_channels": (f(lambda s, a: a.mean(1, keepdim=True)), [(1, 8, 5, 6)], R, True, "mean_dim_converter.py", ""),
    "mean_rank2_all": (f(lambda s, a: a.mean((0, 1), keepdim=True)), [(4, 24)], R, True, "mean_dim_converter.py",
                       ""),
    "mean_batch": (f(lambda s, a: a.mean(0)), [(3, 8, 5)], R, True, "mean_dim_converter.py", ""),
    "mean_rank2_last": (f(lambda s, a: a.mean(-1)), [(4, 24)], R, True, "mean_dim_converter.py", ""),
    "mean_rank3_two_dims": (f(lambda s, a: a.mean((1, 2))), [(2, 5, 6)], R, True, "mean_dim_converter.py", ""),
    "mean_size1_keepdim": (f(lambda s, a: a.mean(1, keepdim=True)), [(1, 1, 5, 6)], R, False,
                           "mean_dim_converter.py", "keepdim over a dim of size 1, alone in its partition"),
    "sum_last": (f(lambda s, a: a.sum(-1, keepdim=True)), [(1, 6, 32)], R, True, "sum_dim_int_list_converter.py", ""),
    "sum_channels": (f(lambda s, a: a.sum(1)), [(1, 8, 5, 6)], R, True, "sum_dim_int_list_converter.py", ""),
    "sum_hw_keepdim": (f(lambda s, a: a.sum((2, 3), keepdim=True)), [(1, 16, 3, 7)], R, True,
                       "sum_dim_int_list_converter.py", ""),
    "sum_rank3_two_dims": (f(lambda s, a: a.sum((1, 2))), [(2, 5, 6)], R, True, "sum_dim_int_list_converter.py", ""),
    "sum_all": (f(lambda s, a: a.sum()), [(1, 6, 20)], R, True, "sum_dim_int_list_converter.py",
                "SumPattern; aten.sum.default becomes sum.dim_IntList(dim=None)"),
    "sum_all_rank4": (f(lambda s, a: a.sum()), [(1, 4, 5, 6)], R, True, "sum_dim_int_list_converter.py", ""),
    # avg_pool_2d_converter.py (channels-first): padding only with count_include_pad=True, no ceil_mode, no
    # divisor_override, kernel and stride <= 4096, shared qparams; rank 3 gets a batch dim
    "avg_k2": (m(nn.AvgPool2d(2)), [(1, 8, 6, 8)], R, True, "avg_pool_2d_converter.py", ""),
    "avg_rank3": (m(nn.AvgPool2d(2)), [(8, 6, 8)], R, True, "avg_pool_2d_converter.py",
                  "AddBatchSizeFor3DInputPool2DOps"),
    "avg_pool1d": (m(nn.AvgPool1d(2)), [(1, 8, 20)], R, True, "avg_pool_2d_converter.py", "AvgPool1DPattern"),
    "avg_k3_p1_include_pad": (m(nn.AvgPool2d(3, 1, 1)), [(1, 8, 7, 9)], R, True, "avg_pool_2d_converter.py", ""),
    "avg_rank3_k3_p1": (m(nn.AvgPool2d(3, 2, 1)), [(6, 7, 9)], R, True, "avg_pool_2d_converter.py",
                        "AddBatchSizeFor3DInputPool2DOps"),
    "avg_k3_s2_p1_include_pad": (m(nn.AvgPool2d(3, 2, 1)), [(1, 16, 10, 7)], R, True, "avg_pool_2d_converter.py",
                                 ""),
    "avg_k2x3": (m(nn.AvgPool2d((2, 3))), [(1, 8, 6, 9)], R, True, "avg_pool_2d_converter.py", ""),
    "avg_k4096": (m(nn.AvgPool2d((1, 4096))), [(1, 2, 1, 4096)], R, True, "avg_pool_2d_converter.py",
                  "kernel 4096: the largest accepted"),
    "avg_k4097": (m(nn.AvgPool2d((1, 4097))), [(1, 2, 1, 4097)], R, False, "avg_pool_2d_converter.py",
                  "kernel 4097 > 4096"),
    "avg_s4096": (m(nn.AvgPool2d((1, 2), (1, 4096))), [(1, 2, 1, 4098)], R, True, "avg_pool_2d_converter.py",
                  "stride 4096"),
    "avg_s4097": (m(nn.AvgPool2d((1, 2), (1, 4097))), [(1, 2, 1, 4099)], R, False, "avg_pool_2d_converter.py",
                  "stride 4097 > 4096"),
    "avg_k3_p1_exclude_pad": (m(nn.AvgPool2d(3, 1, 1, count_include_pad=False)), [(1, 8, 7, 9)], R, False,
                              "avg_pool_2d_converter.py", "padding with count_include_pad=False"),
    "avg_ceil": (m(nn.AvgPool2d(2, ceil_mode=True)), [(1, 8, 9, 7)], R, False, "avg_pool_2d_converter.py", ""),
    "avg_divisor": (m(nn.AvgPool2d(2, divisor_override=3)), [(1, 8, 6, 8)], R, False, "avg_pool_2d_converter.py",
                    ""),
    # bmm_converter.py: two rank-3 int8 operands with zero point 0 (NXP's BMMPattern quantizes them
    # symmetrically); `a @ b` is exported as aten.matmul, which no NXP pattern quantizes
    "bmm": (f(lambda s, a, b: torch.bmm(a, b)), [(2, 4, 8), (2, 8, 5)], R, True, "bmm_converter.py", ""),
    "bmm_batch1": (f(lambda s, a, b: torch.bmm(a, b)), [(1, 6, 16), (1, 16, 6)], R, True, "bmm_converter.py", ""),
    "bmm_param": (lambda: Param(torch.bmm, 2, 8, 5), [(2, 4, 8)], R, True, "bmm_converter.py", "a constant operand"),
    "matmul_rank3": (f(lambda s, a, b: a @ b), [(2, 4, 8), (2, 8, 5)], R, False, "bmm_converter.py",
                     "aten.matmul: no NXP quantizer pattern"),
    # cat_converter.py: int8, inputs and output share qparams (NXP's CatPattern shares them)
    "cat_4_8": (f(lambda s, a, b: torch.cat([a, b], 1)), [(1, 4, 3, 5), (1, 8, 3, 5)], R, True,
                "cat_converter.py", ""),
    "cat_last_rank3": (f(lambda s, a, b: torch.cat([a, b], -1)), [(1, 6, 8), (1, 6, 5)], R, True,
                       "cat_converter.py", ""),
    "cat_three": (f(lambda s, a, b, c: torch.cat([a, b, c], 1)), [(1, 2, 3, 5), (1, 3, 3, 5), (1, 5, 3, 5)], R, True,
                  "cat_converter.py", ""),
    "cat_of_relus": (f(lambda s, a, b: torch.cat([torch.relu(a), torch.relu(b)], 1)), [(1, 4, 3, 5), (1, 6, 3, 5)],
                     R, True, "cat_converter.py", "ActivationsConcatClusterPattern"),
    "cat_batch": (f(lambda s, a, b: torch.cat([a, b], 0)), [(1, 4, 3, 5), (2, 4, 3, 5)], R, True, "cat_converter.py",
                  ""),
    "cat_rank2": (f(lambda s, a, b: torch.cat([a, b], 1)), [(3, 8), (3, 12)], R, True, "cat_converter.py", ""),
    "cat_with_param": (lambda: Param(lambda a, p: torch.cat([a, p], 1), 1, 3, 3, 5), [(1, 4, 3, 5)], R, True,
                       "cat_converter.py", "a constant input shares the qparams"),
    "cat_then_relu": (f(lambda s, a, b: torch.relu(torch.cat([a, b], 1))), [(1, 4, 3, 5), (1, 6, 3, 5)], R, True,
                      "cat_converter.py", "MoveActivationBeforeConcat"),
    # clamp_converter.py / hardtanh_converter.py / relu_converter.py: bounds (0, None), (0, 6), (-1, 1), (0, 1)
    # become RELU ops (own output qparams; alone in a partition only if the hinge survives quantization); other
    # bounds need equal input and output qparams (the quantizer shares them) and are refused alone when they
    # do not clip the quantized range; no bounds at all is refused
    "relu": (m(nn.ReLU()), [(1, 8, 5, 6)], R, True, "relu_converter.py", ""),
    "relu_rank2": (m(nn.ReLU()), [(4, 24)], R, True, "relu_converter.py", ""),
    "relu_inplace": (m(nn.ReLU(inplace=True)), [(1, 8, 5, 6)], R, True, "relu_converter.py", "ReluInPlacePattern"),
    "relu_positive_input": (m(nn.ReLU()), [(1, 8, 5, 6)], P, False, "relu_converter.py",
                            "hinge at the quantized minimum: collapses to identity, alone in its partition"),
    "relu6_module": (m(nn.ReLU6()), [(1, 8, 5, 6)], R, True, "hardtanh_converter.py", "hardtanh(0, 6)"),
    "relu6_functional": (f(lambda s, a: F.relu6(a)), [(1, 8, 5, 6)], R, False, "hardtanh_converter.py",
                         "exported as aten.relu6: no NXP quantizer pattern"),
    "hardtanh_default": (m(nn.Hardtanh()), [(1, 8, 5, 6)], R, True, "hardtanh_converter.py", "(-1, 1)"),
    "hardtanh_m2_2": (m(nn.Hardtanh(-2.0, 2.0)), [(1, 8, 5, 6)], R, True, "hardtanh_converter.py",
                      "general bounds, shared qparams"),
    "clamp_0_6": (f(lambda s, a: a.clamp(0, 6)), [(1, 8, 5, 6)], R, True, "clamp_converter.py", ""),
    "clamp_0_1": (f(lambda s, a: a.clamp(0, 1)), [(1, 8, 5, 6)], R, True, "clamp_converter.py", ""),
    "clamp_min0": (f(lambda s, a: a.clamp(min=0)), [(1, 8, 5, 6)], R, True, "clamp_converter.py", "(0, None)"),
    "clamp_general": (f(lambda s, a: a.clamp(-0.5, 0.5)), [(1, 8, 5, 6)], R, True, "clamp_converter.py", ""),
    "clamp_min_only": (f(lambda s, a: a.clamp(min=-0.2)), [(2, 24)], R, True, "clamp_converter.py", ""),
    "clamp_inf": (f(lambda s, a: a.clamp(min=float("-inf"))), [(1, 8, 5, 6)], R, False, "clamp_converter.py",
                  "no finite bound"),
    "clamp_max_only": (f(lambda s, a: a.clamp(max=0.5)), [(1, 8, 5, 6)], R, True, "clamp_converter.py", ""),
    "clamp_noop_alone": (f(lambda s, a: a.clamp(-100, 100)), [(1, 8, 5, 6)], R, False, "clamp_converter.py",
                         "bounds outside the quantized range, alone in its partition"),
    # constant_pad_nd_converter.py: at most 2 * rank padding values, any dims, any value, shared qparams
    "pad_w": (f(lambda s, a: F.pad(a, (2, 1))), [(1, 8, 5, 6)], R, True, "constant_pad_nd_converter.py", ""),
    "pad_hw": (f(lambda s, a: F.pad(a, (1, 1, 2, 0))), [(1, 8, 5, 6)], R, True, "constant_pad_nd_converter.py", ""),
    "pad_channels": (f(lambda s, a: F.pad(a, (0, 0, 0, 0, 1, 2))), [(1, 8, 4, 6)], R, True,
                     "constant_pad_nd_converter.py", ""),
    "pad_batch": (f(lambda s, a: F.pad(a, (0, 0, 0, 0, 0, 0, 1, 0))), [(1, 4, 3, 5)], R, True,
                  "constant_pad_nd_converter.py", "2 * rank values"),
    "pad_rank3": (f(lambda s, a: F.pad(a, (1, 2, 3, 0))), [(1, 5, 12)], R, True, "constant_pad_nd_converter.py", ""),
    "pad_rank2": (f(lambda s, a: F.pad(a, (2, 2))), [(6, 10)], R, True, "constant_pad_nd_converter.py", ""),
    "pad_value": (f(lambda s, a: F.pad(a, (1, 1, 1, 1), value=0.5)), [(1, 8, 5, 6)], R, True,
                  "constant_pad_nd_converter.py", "a non-zero constant"),
    # pad_converter.py: aten.pad in reflect mode (NXP's pipeline keeps aten.pad from decomposition)
    "pad_reflect": (f(lambda s, a: F.pad(a, (1, 1, 2, 2), mode="reflect")), [(1, 8, 5, 6)], R, True,
                    "pad_converter.py", "executorch_pipeline.py preserves aten.pad"),
    "pad_reflect_rank3": (f(lambda s, a: F.pad(a, (1, 2), mode="reflect")), [(1, 16, 10)], R, True,
                          "pad_converter.py", ""),
    "pad_replicate": (f(lambda s, a: F.pad(a, (1, 1, 2, 2), mode="replicate")), [(1, 8, 5, 6)], R, False,
                      "pad_converter.py", "mode replicate"),
    # convolution_converter.py (channels-first): static int8 weights, int32 bias; kernel, stride, dilation
    # <= 4096; kh * kw * ceil(Cin, num_macs) <= 65535; transposed: groups 1, stride <= kernel and <= 2,
    # padding < kernel, dilation 1; grouped convs split (aten_passes/split_group_convolution.py), conv1d made
    # 2-D (convert_1d_conv_to_2d.py), batch norm folded (fuse_batch_norm_with_conv_pass.py)
    "conv3x3": (m(nn.Conv2d(3, 8, 3)), [(1, 3, 9, 10)], R, True, "convolution_converter.py", ""),
    "conv1x1": (m(nn.Conv2d(16, 8, 1)), [(1, 16, 5, 6)], R, True, "convolution_converter.py", ""),
    "conv_nobias": (m(nn.Conv2d(4, 8, 3, bias=False)), [(1, 4, 7, 6)], R, True, "convolution_converter.py", ""),
    "conv_batch2": (m(nn.Conv2d(4, 8, 3)), [(2, 4, 7, 6)], R, True, "convolution_converter.py", ""),
    "conv_pad_h_only": (m(nn.Conv2d(4, 8, 3, padding=(1, 0))), [(1, 4, 7, 6)], R, True, "convolution_converter.py",
                        ""),
    "conv_s2_p1": (m(nn.Conv2d(4, 8, 3, 2, 1)), [(1, 4, 9, 8)], R, True, "convolution_converter.py", ""),
    "conv_dilation2": (m(nn.Conv2d(4, 8, 3, dilation=2)), [(1, 4, 9, 10)], R, True, "convolution_converter.py", ""),
    "conv_padding_same": (m(nn.Conv2d(4, 8, 3, padding="same")), [(1, 4, 7, 5)], R, True,
                          "convolution_converter.py", "Conv2dPatternPadding"),
    "depthwise": (m(nn.Conv2d(8, 8, 3, groups=8)), [(1, 8, 9, 10)], R, True, "convolution_converter.py", ""),
    "depthwise_mult2": (m(nn.Conv2d(8, 16, 3, groups=8)), [(1, 8, 7, 6)], R, True, "convolution_converter.py",
                        "depth multiplier 2"),
    "conv_groups2": (m(nn.Conv2d(8, 16, 3, groups=2)), [(1, 8, 7, 6)], R, True, "convolution_converter.py",
                     "SplitGroupConvolution"),
    "conv1d": (m(nn.Conv1d(4, 8, 3)), [(1, 4, 20)], R, True, "convolution_converter.py", "ConvertConv1dToConv2dPass"),
    "conv_bn": (f(lambda s, a: s.mods[1](s.mods[0](a)), nn.Conv2d(4, 8, 3), nn.BatchNorm2d(8)), [(1, 4, 7, 9)], R,
                True, "convolution_converter.py", "FuseBatchNormWithConvPass"),
    "conv_s4096": (m(nn.Conv2d(2, 4, 1, (1, 4096))), [(1, 2, 1, 4098)], R, True, "convolution_converter.py",
                   "stride 4096"),
    "conv_s4097": (m(nn.Conv2d(2, 4, 1, (1, 4097))), [(1, 2, 1, 4099)], R, False, "convolution_converter.py",
                   "stride 4097 > 4096"),
    "conv_reflect_padding": (m(nn.Conv2d(4, 8, 3, padding=1, padding_mode="reflect")), [(1, 4, 7, 6)], R, True,
                             "convolution_converter.py", "pad (reflect, kept by NXP's pipeline) + conv"),
    "conv_k16_cin248": (m(nn.Conv2d(248, 4, 16)), [(1, 248, 16, 16)], R, True, "convolution_converter.py",
                        "16 * 16 * 248 = 63488 <= 65535 (num_macs 8)"),
    "conv_k16_cin249": (m(nn.Conv2d(249, 4, 16)), [(1, 249, 16, 16)], R, False, "convolution_converter.py",
                        "16 * 16 * ceil(249, 8) = 65536 > 65535"),
    "conv_dynamic_weight": (f(lambda s, a, w: F.conv2d(a, w)), [(1, 4, 7, 6), (8, 4, 3, 3)], R, False,
                            "convolution_converter.py", "the weight is not static"),
    "conv_transpose_k2_s2": (m(nn.ConvTranspose2d(8, 8, 2, 2)), [(1, 8, 4, 5)], R, True, "convolution_converter.py",
                             ""),
    "conv_transpose_k3_s2_p1": (m(nn.ConvTranspose2d(8, 4, 3, 2, 1)), [(1, 8, 4, 5)], R, True,
                                "convolution_converter.py", ""),
    "conv_transpose1d": (m(nn.ConvTranspose1d(4, 6, 2, 2)), [(1, 4, 10)], R, True, "convolution_converter.py",
                         "ConvertConv1dToConv2dPass (transposed too)"),
    "conv_transpose_outpad1": (m(nn.ConvTranspose2d(8, 4, 3, 2, 1, output_padding=1)), [(1, 8, 4, 5)], R, True,
                               "convolution_converter.py", "output_padding is checked for regular convs only"),
    "conv_transpose_k16_cin248": (m(nn.ConvTranspose2d(248, 4, 16, 2)), [(1, 248, 2, 2)], R, True,
                                  "convolution_converter.py", "16 * 16 * 248 = 63488 <= 65535"),
    "conv_transpose_k16_cin249": (m(nn.ConvTranspose2d(249, 4, 16, 2)), [(1, 249, 2, 2)], R, False,
                                  "convolution_converter.py", "16 * 16 * ceil(249, 8) = 65536 > 65535"),
    "conv_transpose_s3": (m(nn.ConvTranspose2d(8, 8, 3, 3)), [(1, 8, 4, 5)], R, False, "convolution_converter.py",
                          "stride 3 > 2"),
    "conv_transpose_s_gt_k": (m(nn.ConvTranspose2d(8, 8, 1, 2)), [(1, 8, 4, 5)], R, False,
                              "convolution_converter.py", "stride 2 > kernel 1"),
    "conv_transpose_p_eq_k": (m(nn.ConvTranspose2d(8, 8, 2, 2, padding=2)), [(1, 8, 6, 5)], R, False,
                              "convolution_converter.py", "padding 2 >= kernel 2"),
    "conv_transpose_groups2": (m(nn.ConvTranspose2d(8, 8, 2, 2, groups=2)), [(1, 8, 4, 5)], R, False,
                               "convolution_converter.py", "groups 2"),
    "conv_transpose_dilation2": (m(nn.ConvTranspose2d(8, 8, 2, 2, dilation=2)), [(1, 8, 4, 5)], R, False,
                                 "convolution_converter.py", "dilation 2"),
    "batchnorm_alone": (m(nn.BatchNorm2d(8)), [(1, 8, 5, 6)], R, False, "convolution_converter.py",
                        "BatchNormPattern quantizes only in QAT: no conv to fold into"),
    # exp / log / rsqrt / sigmoid / tanh / hardswish / leaky_relu / neg converters: int8 in and out, any rank
    "exp": (f(lambda s, a: torch.exp(a)), [(1, 6, 32)], R, True, "exp_converter.py", ""),
    "exp_rank1": (f(lambda s, a: torch.exp(a)), [(40,)], R, True, "exp_converter.py", ""),
    "exp_rank4": (f(lambda s, a: torch.exp(a)), [(1, 4, 5, 6)], R, True, "exp_converter.py", ""),
    "log": (f(lambda s, a: torch.log(a)), [(3, 24)], P, True, "log_converter.py", ""),
    "log_rank4": (f(lambda s, a: torch.log(a)), [(1, 4, 5, 6)], P, True, "log_converter.py", ""),
    "rsqrt": (f(lambda s, a: torch.rsqrt(a)), [(1, 8, 5, 6)], P, True, "rsqrt_converter.py", ""),
    "rsqrt_t1": (f(lambda s, a: torch.rsqrt(a)), [(1, 6, 1)], P, True, "rsqrt_converter.py", ""),
    "sigmoid": (m(nn.Sigmoid()), [(2, 8, 5)], R, True, "sigmoid_converter.py", ""),
    "sigmoid_rank4": (m(nn.Sigmoid()), [(1, 8, 5, 6)], R, True, "sigmoid_converter.py", ""),
    "tanh": (m(nn.Tanh()), [(3, 24)], R, True, "tanh_converter.py", ""),
    "tanh_rank4": (m(nn.Tanh()), [(1, 8, 5, 6)], R, True, "tanh_converter.py", ""),
    "hardswish": (m(nn.Hardswish()), [(1, 8, 5, 6)], R, True, "hardswish_converter.py", ""),
    "hardswish_inplace": (m(nn.Hardswish(inplace=True)), [(1, 6, 5, 4)], R, True, "hardswish_converter.py",
                          "HardSwishInPlacePattern"),
    "hardswish_rank2": (m(nn.Hardswish()), [(4, 24)], R, True, "hardswish_converter.py", ""),
    "leaky_relu": (m(nn.LeakyReLU(0.1)), [(1, 8, 5, 6)], R, True, "leaky_relu_converter.py", ""),
    "leaky_relu_inplace": (m(nn.LeakyReLU(0.1, inplace=True)), [(1, 8, 5, 6)], R, True, "leaky_relu_converter.py",
                           "LeakyReluInPlacePattern"),
    "leaky_relu_rank3": (m(nn.LeakyReLU(0.2)), [(1, 6, 20)], R, True, "leaky_relu_converter.py", ""),
    "neg": (f(lambda s, a: -a), [(1, 8, 5, 6)], R, True, "neg_converter.py", ""),
    "neg_rank1": (f(lambda s, a: -a), [(40,)], R, True, "neg_converter.py", ""),
    "neg_rank2": (f(lambda s, a: -a), [(3, 24)], R, True, "neg_converter.py", ""),
    # max_pool2d_with_indices_converter.py (channels-first): stride <= 4096, any padding, no ceil_mode, no
    # dilation, indices unused, shared qparams; rank 3 gets a batch dim
    "max_k2": (m(nn.MaxPool2d(2)), [(1, 8, 8, 10)], R, True, "max_pool2d_with_indices_converter.py", ""),
    "max_k3_s2_p1": (m(nn.MaxPool2d(3, 2, 1)), [(1, 16, 10, 14)], R, True, "max_pool2d_with_indices_converter.py",
                     "on the model input"),
    "max_k3_s3": (m(nn.MaxPool2d(3, 3)), [(1, 8, 9, 12)], R, True, "max_pool2d_with_indices_converter.py", ""),
    "max_6_channels": (m(nn.MaxPool2d(2)), [(1, 6, 8, 10)], R, True, "max_pool2d_with_indices_converter.py", ""),
    "max_batch2": (m(nn.MaxPool2d(2)), [(2, 8, 8, 10)], R, True, "max_pool2d_with_indices_converter.py", ""),
    "max_rank3": (m(nn.MaxPool2d(2)), [(8, 8, 10)], R, True, "max_pool2d_with_indices_converter.py",
                  "AddBatchSizeFor3DInputPool2DOps"),
    "max_rank3_k3_s2_p1": (m(nn.MaxPool2d(3, 2, 1)), [(6, 9, 11)], R, True, "max_pool2d_with_indices_converter.py",
                           "AddBatchSizeFor3DInputPool2DOps"),
    "max_pool1d": (m(nn.MaxPool1d(2)), [(1, 8, 20)], R, True, "max_pool2d_with_indices_converter.py",
                   "MaxPool1DPattern"),
    "max_k2x3_s1x2": (m(nn.MaxPool2d((2, 3), (1, 2))), [(1, 8, 6, 9)], R, True,
                      "max_pool2d_with_indices_converter.py", ""),
    "max_s4096": (m(nn.MaxPool2d((1, 2), (1, 4096))), [(1, 2, 1, 4098)], R, True,
                  "max_pool2d_with_indices_converter.py", "stride 4096"),
    "max_s4097": (m(nn.MaxPool2d((1, 2), (1, 4097))), [(1, 2, 1, 4099)], R, False,
                  "max_pool2d_with_indices_converter.py", "stride 4097 > 4096"),
    "max_ceil": (m(nn.MaxPool2d(2, ceil_mode=True)), [(1, 8, 9, 7)], R, False,
                 "max_pool2d_with_indices_converter.py", "ceil_mode"),
    "max_k3_s2_p1_ceil": (m(nn.MaxPool2d(3, 2, 1, ceil_mode=True)), [(1, 16, 10, 14)], R, False,
                          "max_pool2d_with_indices_converter.py", "ceil_mode, on the model input"),
    "max_indices_used": (f(lambda s, a: F.max_pool2d(a, 2, return_indices=True)[1].float()), [(1, 8, 6, 8)], R, False,
                         "max_pool2d_with_indices_converter.py", "the indices are used"),
    "max_dilation2": (m(nn.MaxPool2d(2, dilation=2)), [(1, 8, 9, 7)], R, False,
                      "max_pool2d_with_indices_converter.py", "dilation"),
    # permute_copy_converter.py: int8, shared qparams, any permutation (transposition_is_supported_on_neutron
    # is True on Neutron-C); refused only alone on a static input
    "permute_nhwc": (f(lambda s, a: a.permute(0, 2, 3, 1)), [(1, 8, 5, 6)], R, True, "permute_copy_converter.py", ""),
    "transpose_rank3": (f(lambda s, a: a.transpose(1, 2)), [(1, 6, 20)], R, True, "permute_copy_converter.py", ""),
    "transpose_rank2": (f(lambda s, a: a.t()), [(6, 20)], R, True, "permute_copy_converter.py", ""),
    "permute_batch2": (f(lambda s, a: a.permute(1, 0, 2, 3)), [(2, 4, 5, 6)], R, True, "permute_copy_converter.py",
                       "moves a batch of 2"),
    "permute_rank5": (f(lambda s, a: a.permute(0, 4, 1, 2, 3)), [(1, 2, 3, 4, 5)], R, True,
                      "permute_copy_converter.py", ""),
    # prelu_converter.py: broadcast condition; rank > 2 with a slope per channel is a channels-first node
    "prelu_8": (m(nn.PReLU(8, 0.1)), [(1, 8, 5, 6)], R, True, "prelu_converter.py", ""),
    "prelu_6_channels": (m(nn.PReLU(6, 0.1)), [(1, 6, 4, 5)], R, True, "prelu_converter.py", ""),
    "prelu_rows_5120": (m(nn.PReLU(8, 0.1)), [(1, 8, 80, 64)], R, True, "prelu_converter.py", ""),
    "prelu_rank4_shared": (m(nn.PReLU(1, 0.2)), [(1, 8, 5, 6)], R, True, "prelu_converter.py", "slope shape (1,)"),
    "prelu_rank3_shared": (m(nn.PReLU(1, 0.2)), [(1, 8, 20)], R, True, "prelu_converter.py", "slope shape (1,)"),
    "prelu_rank3_channels": (m(nn.PReLU(8, 0.2)), [(2, 8, 11)], R, True, "prelu_converter.py", ""),
    "prelu_rank2": (m(nn.PReLU(16, 0.2)), [(3, 16)], R, True, "prelu_converter.py", ""),
    # slice_copy_tensor_converter.py: step 1 (4 args), a valid dim, start < end after clipping; split becomes
    # slices (aten_passes/decompose_split_to_slices_pass.py), chunk has no NXP pattern
    "slice_w": (f(lambda s, a: a[:, :, :, 1:5]), [(1, 8, 5, 6)], R, True, "slice_copy_tensor_converter.py", ""),
    "slice_channels": (f(lambda s, a: a[:, 2:6]), [(1, 8, 5, 6)], R, True, "slice_copy_tensor_converter.py", ""),
    "slice_last_rank3": (f(lambda s, a: a[..., 3:17]), [(1, 6, 20)], R, True, "slice_copy_tensor_converter.py", ""),
    "slice_negative": (f(lambda s, a: a[..., -3:]), [(1, 8, 5, 6)], R, True, "slice_copy_tensor_converter.py", ""),
    "slice_end_clipped": (f(lambda s, a: a[:, 4:100]), [(2, 12)], R, True, "slice_copy_tensor_converter.py",
                          "end beyond the size"),
    "split_two": (f(lambda s, a: torch.split(a, [3, 5], 1)), [(1, 8, 4, 6)], R, True,
                  "slice_copy_tensor_converter.py", "DecomposeSplitToSlicesPass"),
    "chunk_two": (f(lambda s, a: torch.chunk(a, 2, 1)), [(1, 8, 4, 6)], R, False, "slice_copy_tensor_converter.py",
                  "aten.chunk: no NXP quantizer pattern"),
    "slice_batch": (f(lambda s, a: a[1:3]), [(4, 6, 5)], R, True, "slice_copy_tensor_converter.py", ""),
    "slice_step2": (f(lambda s, a: a[:, :, ::2]), [(1, 8, 6, 4)], R, False, "slice_copy_tensor_converter.py",
                    "step != 1"),
    # softmax_converter.py: over the channels dim (1 for channels-first nodes, else the last), channels <= 2040,
    # N*H*W <= 4096, total <= 524288
    "softmax_10": (m(nn.Softmax(-1)), [(1, 10)], R, True, "softmax_converter.py", ""),
    "softmax3_last": (m(nn.Softmax(-1)), [(2, 3, 16)], R, True, "softmax_converter.py", ""),
    "softmax4_last": (m(nn.Softmax(-1)), [(1, 2, 8, 16)], R, True, "softmax_converter.py",
                      "no conv/pool around: the node is not channels-first, its channels dim is the last"),
    "softmax4_last_attention": (m(nn.Softmax(3)), [(2, 3, 5, 24)], R, True, "softmax_converter.py", ""),
    "softmax4_dim1_after_conv": (f(lambda s, a: torch.softmax(s.mods[0](a), 1), nn.Conv2d(3, 16, 1)),
                                 [(1, 3, 5, 6)], R, True, "softmax_converter.py", "channels-first after a conv"),
    "softmax_rank1": (m(nn.Softmax(0)), [(24,)], R, True, "softmax_converter.py", ""),
    "softmax_2040": (m(nn.Softmax(-1)), [(1, 2040)], R, True, "softmax_converter.py", "2040 channels: the largest"),
    "softmax_2048": (m(nn.Softmax(-1)), [(1, 2048)], R, False, "softmax_converter.py", "channels > 2040"),
    "softmax_rows_4096": (m(nn.Softmax(-1)), [(4096, 8)], R, True, "softmax_converter.py", "N*H*W = 4096"),
    "softmax_rows_4100": (m(nn.Softmax(-1)), [(4100, 8)], R, False, "softmax_converter.py", "N*H*W > 4096"),
    "softmax_total_524288": (m(nn.Softmax(-1)), [(1024, 512)], R, True, "softmax_converter.py",
                             "1024 * 512 = 524288"),
    "softmax_total_525312": (m(nn.Softmax(-1)), [(1026, 512)], R, False, "softmax_converter.py",
                             "1026 * 512 > 524288"),
    "softmax3_dim1": (m(nn.Softmax(1)), [(2, 6, 10)], R, False, "softmax_converter.py", "not the channels dim"),
    "softmax4_dim1_alone": (m(nn.Softmax(1)), [(1, 8, 5, 6)], R, False, "softmax_converter.py",
                            "no conv around: the channels dim is the last"),
    "softmax4_last_after_conv": (f(lambda s, a: torch.softmax(s.mods[0](a), -1), nn.Conv2d(3, 16, 1)),
                                 [(1, 3, 5, 6)], R, False, "softmax_converter.py",
                                 "channels-first after a conv: the last dim is not the channels dim"),
    # upsample_nearest2d_converter.py / upsample_bilinear2d_converter.py (channels-first): rank 4, each scale
    # 1, 2, 4 or 8 (bilinear with align_corners: (out - 1) / (in - 1), input size > 1); scale 1x1 refused alone
    "nearest_x2": (m(nn.Upsample(scale_factor=2)), [(1, 8, 3, 5)], R, True, "upsample_nearest2d_converter.py", ""),
    "nearest_x8": (m(nn.Upsample(scale_factor=8)), [(1, 8, 2, 3)], R, True, "upsample_nearest2d_converter.py", ""),
    "nearest_2x4": (m(nn.Upsample(scale_factor=(2, 4))), [(1, 16, 3, 2)], R, True,
                    "upsample_nearest2d_converter.py", ""),
    "nearest_1x2": (m(nn.Upsample(scale_factor=(1, 2))), [(1, 8, 3, 4)], R, True,
                    "upsample_nearest2d_converter.py", "scale 1 on one axis"),
    "nearest_6_channels": (m(nn.Upsample(scale_factor=2)), [(1, 6, 3, 4)], R, True,
                           "upsample_nearest2d_converter.py", ""),
    "nearest_x3": (m(nn.Upsample(scale_factor=3)), [(1, 8, 3, 4)], R, False, "upsample_nearest2d_converter.py",
                   "scale 3"),
    "nearest_x16": (m(nn.Upsample(scale_factor=16)), [(1, 4, 2, 2)], R, False, "upsample_nearest2d_converter.py",
                    "scale 16 > 8"),
    "nearest_rank3": (m(nn.Upsample(scale_factor=2)), [(1, 8, 10)], R, False, "upsample_nearest2d_converter.py",
                      "upsample_nearest1d: no converter"),
    "nearest_identity": (m(nn.Upsample(size=(3, 5))), [(1, 8, 3, 5)], R, False, "upsample_nearest2d_converter.py",
                         "scale 1x1 alone in its partition"),
    "bilinear_x2": (m(nn.Upsample(scale_factor=2, mode="bilinear")), [(1, 8, 3, 4)], R, True,
                    "upsample_bilinear2d_converter.py", ""),
    "bilinear_x8": (m(nn.Upsample(scale_factor=8, mode="bilinear")), [(1, 8, 2, 3)], R, True,
                    "upsample_bilinear2d_converter.py", ""),
    "bilinear_4x2": (m(nn.Upsample(scale_factor=(4, 2), mode="bilinear")), [(1, 16, 3, 5)], R, True,
                     "upsample_bilinear2d_converter.py", ""),
    "bilinear_ac_5x9_to_9x17": (m(nn.Upsample(size=(9, 17), mode="bilinear", align_corners=True)), [(1, 8, 5, 9)],
                                R, True, "upsample_bilinear2d_converter.py", "align_corners: (out-1)/(in-1) = 2"),
    "bilinear_ac_h1": (m(nn.Upsample(size=(2, 7), mode="bilinear", align_corners=True)), [(1, 8, 1, 4)], R, False,
                       "upsample_bilinear2d_converter.py", "align_corners with an input size of 1"),
    "bilinear_x3": (m(nn.Upsample(scale_factor=3, mode="bilinear")), [(1, 8, 3, 4)], R, False,
                    "upsample_bilinear2d_converter.py", "scale 3"),
    "bilinear_x16": (m(nn.Upsample(scale_factor=16, mode="bilinear")), [(1, 4, 2, 2)], R, False,
                     "upsample_bilinear2d_converter.py", "scale 16 > 8"),
    "bilinear_identity": (m(nn.Upsample(size=(3, 5), mode="bilinear")), [(1, 8, 3, 5)], R, False,
                          "upsample_bilinear2d_converter.py", "same size alone in its partition"),
    # view_copy_converter.py (with clone_converter.py, getitem_converter.py): a no-op on Neutron: delegated only
    # with compute in the partition (NeutronPartitioner refuses no-op partitions)
    "flatten_alone": (f(lambda s, a: a.flatten(1)), [(1, 8, 5, 6)], R, False, "view_copy_converter.py",
                      "a no-op partition"),
    "unsqueeze_alone": (f(lambda s, a: a.unsqueeze(1)), [(2, 24)], R, False, "view_copy_converter.py",
                        "a no-op partition"),
    "clone_alone": (f(lambda s, a: a.clone()), [(1, 8, 5, 6)], R, False, "clone_converter.py", "a no-op partition"),
    "flatten_linear": (f(lambda s, a: s.mods[0](a.flatten(1)), nn.Linear(30, 8)), [(1, 5, 6)], R, True,
                       "view_copy_converter.py", "with a linear"),
    "reshape_between": (f(lambda s, a: torch.relu(a.reshape(2, 4, 30) * 2.0)), [(1, 8, 5, 6)], R, True,
                        "view_copy_converter.py", "with compute"),
}


def _inputs(shapes, kind, seed):
    g = torch.Generator().manual_seed(seed)
    if kind == P:
        return tuple(torch.rand(*s, generator=g) * 3 + 0.05 for s in shapes)
    return tuple(torch.randn(*s, generator=g) for s in shapes)


#: views and clones: no computation, so one left on the CPU (a reshape to a 0-d output) does not count
NOOP_OPS = {op_name(t) for e in entries() if e.noop for t in e.targets}


def verdict(make, shapes, kind) -> tuple[bool, str]:
    """(all compute nodes delegated, first CPU reason or error)."""
    torch.manual_seed(0)
    inputs = _inputs(shapes, kind, 0)
    calib = [inputs] + [_inputs(shapes, kind, 1 + i) for i in range(3)] if kind == P else \
        [inputs] + calibration(inputs, 3)
    try:
        report = lower(make().eval(), inputs, calib).report
    except Exception as exc:  # noqa: BLE001 - a crash is a verdict too
        return False, f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    compute = [j for j in report.rejections if j.op not in NOOP_OPS]
    if compute:
        j = compute[0]
        return False, f"{j.op}: {j.reason}"[:160]
    return bool(report.partitions), "" if report.partitions else "no partition"


def max_steps(make, shapes, kind) -> tuple[int, int] | str:
    """Worst error, in output quantization steps against PyTorch's quantized model (convert_pt2e), of the
    partition's TFLite in LiteRT and of the .pte on the host runtime, over 5 samples (the calibration set)."""
    from executorch_neutron.runtime import run

    samples = [_inputs(shapes, kind, i) for i in range(5)]
    torch.manual_seed(0)
    try:
        r = lower_and_run(make().eval(), samples[0], samples)
    except AssertionError as exc:
        return f"not one partition: {str(exc).splitlines()[0][:80]}"
    tflite = max((int(steps(o, ref).max()) if o.size else 0) for o, ref in zip(r.outputs, r.references))
    qparams = model_output_qparams(r.result.quantized_model)
    pte = 0
    with torch.no_grad():
        for x in samples:
            ours, ref = run(r.result.pte, x), r.result.quantized_model(*x)
            ref = ref if isinstance(ref, (tuple, list)) else (ref,)
            for o, q, (scale, zp) in zip(ours, ref, qparams):
                pte = max(pte, int(steps(quantize_np(o.numpy(), scale, zp), quantize_np(q.numpy(), scale, zp)).max()))
    return tflite, pte


def main() -> None:
    import _docs

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--steps", action="store_true", help="for the cases both delegate, also run them: the TFLite "
                    "and the .pte against PyTorch's quantized model, in output steps (slower)")
    _docs.add_argument(ap)
    args = ap.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.ERROR, format="%(message)s")
    logging.getLogger("executorch_neutron").setLevel(logging.DEBUG if args.verbose else logging.ERROR)
    with _docs.figures(args, "benchmarks/op_parity.py", "op_parity", "Parity with NXP's current release"):
        _compare(args)


def _compare(args) -> None:
    gaps, beyond, agree, over = [], [], 0, []
    print(f"{'case':28} {'NXP':4} {'ours':4}  NXP converter / our reason")
    for name in args.cases:
        make, shapes, kind, nxp, source, note = CASES[name]
        ours, reason = verdict(make, shapes, kind)
        mark = "" if ours == nxp else ("  <-- GAP" if nxp else "  (beyond NXP)")
        print(f"{name:28} {'NPU' if nxp else 'CPU':4} {'NPU' if ours else 'CPU':4}  {source}"
              f"{' (' + note + ')' if note else ''}{mark}")
        if reason:
            print(f"{'':38}ours: {reason}")
        if args.steps and ours and nxp:
            worst = max_steps(make, shapes, kind)
            print(f"{'':38}" + (worst if isinstance(worst, str) else "max steps: TFLite {}, .pte {}".format(*worst)))
            if isinstance(worst, str) or max(worst) > 1:
                over.append(name)
        if ours == nxp:
            agree += 1
        elif nxp:
            gaps.append(name)
        else:
            beyond.append(name)
    n_nxp = sum(CASES[c][3] for c in args.cases)
    print(f"\n{len(args.cases)} cases; NXP's release delegates {n_nxp}; we agree on {agree}")
    print(f"parity gaps (NXP delegates, we leave on the CPU): {len(gaps)} {gaps}")
    print(f"beyond NXP (we delegate, NXP does not): {len(beyond)} {beyond}")
    if args.steps:
        print(f"delegated by both, more than 1 step off or not one partition: {len(over)} {over}")


if __name__ == "__main__":
    main()

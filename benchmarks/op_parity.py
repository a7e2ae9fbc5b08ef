"""Operator parity with NXP's current release: per single-operator case, our verdict under the default profile
(`sdk-current`) against what NXP's release delegates (prints, never asserts).

    PYTHONPATH=src .venv/bin/python benchmarks/op_parity.py [--cases add_nc11 softmax4_last ...] [--verbose]

The expectation column is hand-written from the support checks of NXP's converters in the executorch 1.5.1
wheel (`executorch/backends/nxp/backend/ir/converter/node_converters/ops_converters/<file>`:
`_is_supported_in_IR`, `_is_supported_on_target`, `NodeConverter.inputs_satisfy_broadcast_condition`, and the
channels-first format some converters require); each row names its file. NXP's code is read for facts only, never
imported. Each case is one operator as a new user writes it, lowered with `lower()` defaults (int8, calibrated on
random data). Our verdict is "NPU" when every compute node is delegated, else "CPU" with the first reason.
Counted: cases NXP delegates that we leave on the CPU (parity gaps), and cases we delegate beyond NXP.
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
from executorch_neutron.zoo import calibration  # noqa: E402
from harness import Fn, Param  # noqa: E402


def f(fn, *mods):
    return lambda: Fn(fn, *mods)


def m(module):
    return lambda: module


R = "randn"
P = "positive"  # (0.05, 3.05): rsqrt and log

# name: (model factory, input shapes, input kind, NXP delegates?, NXP converter file, note)
CASES = {
    # elementwise binary: add_tensor / sub_tensor / mul_tensor / maximum / minimum: inputs int8 and one input
    # with the output's element count (inputs_satisfy_broadcast_condition); add/sub alpha 1
    "add_same": (f(lambda s, a, b: a + b), [(1, 8, 5, 6)] * 2, R, True, "add_tensor_converter.py", ""),
    "add_nc11": (f(lambda s, a, b: a + b), [(1, 16, 8, 8), (1, 16, 1, 1)], R, True, "add_tensor_converter.py", ""),
    "add_rank1": (f(lambda s, a, b: a + b), [(1, 8, 32), (32,)], R, True, "add_tensor_converter.py", ""),
    "add_param32": (lambda: Param(torch.add, 32), [(1, 6, 32)], R, True, "add_tensor_converter.py", ""),
    "add_both_broadcast": (f(lambda s, a, b: a + b), [(1, 8, 1), (1, 1, 32)], R, False, "add_tensor_converter.py",
                           "neither input has the output's size"),
    "add_scalar": (f(lambda s, a: a + 1.0), [(1, 8, 5, 6)], R, False, "add_tensor_converter.py",
                   "NXP's AddTensorPattern quantizes tensor inputs only: the scalar operand is not int8"),
    "add_alpha2": (f(lambda s, a, b: torch.add(a, b, alpha=2)), [(1, 8, 5, 6)] * 2, R, False,
                   "add_tensor_converter.py", "alpha != 1"),
    "sub_same": (f(lambda s, a, b: a - b), [(1, 8, 5, 6)] * 2, R, True, "sub_tensor_converter.py", ""),
    "sub_t1": (f(lambda s, a, b: a - b), [(1, 6, 32), (1, 6, 1)], R, True, "sub_tensor_converter.py", ""),
    "sub_both_broadcast": (f(lambda s, a, b: a - b), [(1, 6, 1), (1, 1, 24)], R, False, "sub_tensor_converter.py",
                           ""),
    "mul_size_105": (f(lambda s, a, b: a * b), [(1, 3, 5, 7)] * 2, R, True, "mul_tensor_converter.py", ""),
    "mul_nc11": (f(lambda s, a, b: a * b), [(1, 16, 6, 9), (1, 16, 1, 1)], R, True, "mul_tensor_converter.py", ""),
    "mul_rank3_by_rank1": (f(lambda s, a, b: a * b), [(1, 8, 32), (32,)], R, True, "mul_tensor_converter.py", ""),
    "mul_both_broadcast": (f(lambda s, a, b: a * b), [(1, 8, 1, 5), (1, 1, 6, 1)], R, False,
                           "mul_tensor_converter.py", ""),
    "maximum_same": (f(lambda s, a, b: torch.maximum(a, b)), [(1, 8, 5, 6)] * 2, R, True, "maximum_converter.py",
                     ""),
    "maximum_bc": (f(lambda s, a, b: torch.maximum(a, b)), [(1, 8, 5, 6), (1, 8, 1, 1)], R, True,
                   "maximum_converter.py", ""),
    "minimum_same": (f(lambda s, a, b: torch.minimum(a, b)), [(2, 24)] * 2, R, True, "minimum_converter.py", ""),
    # unary: int8 in and out
    "abs": (f(lambda s, a: torch.abs(a)), [(1, 8, 5, 6)], R, True, "abs_converter.py", ""),
    "neg": (f(lambda s, a: -a), [(1, 8, 5, 6)], R, True, "neg_converter.py", ""),
    "leaky_relu": (m(nn.LeakyReLU(0.1)), [(1, 8, 5, 6)], R, True, "leaky_relu_converter.py", ""),
    "sigmoid": (m(nn.Sigmoid()), [(2, 8, 5)], R, True, "sigmoid_converter.py", ""),
    "tanh": (m(nn.Tanh()), [(3, 24)], R, True, "tanh_converter.py", ""),
    "hardswish": (m(nn.Hardswish()), [(1, 8, 5, 6)], R, True, "hardswish_converter.py", ""),
    "exp": (f(lambda s, a: torch.exp(a)), [(1, 6, 32)], R, True, "exp_converter.py", ""),
    "log": (f(lambda s, a: torch.log(a)), [(3, 24)], P, True, "log_converter.py", ""),
    "rsqrt": (f(lambda s, a: torch.rsqrt(a)), [(1, 8, 5, 6)], P, True, "rsqrt_converter.py", ""),
    # reductions: int8 in and out, shared qparams (mean/sum/amax/amin)
    "mean_hw": (f(lambda s, a: a.mean((2, 3), keepdim=True)), [(1, 8, 5, 6)], R, True, "mean_dim_converter.py", ""),
    "mean_last_rank3": (f(lambda s, a: a.mean(-1, keepdim=True)), [(1, 6, 32)], R, True, "mean_dim_converter.py",
                        ""),
    "mean_channels": (f(lambda s, a: a.mean(1, keepdim=True)), [(1, 8, 5, 6)], R, True, "mean_dim_converter.py", ""),
    "sum_last": (f(lambda s, a: a.sum(-1, keepdim=True)), [(1, 6, 32)], R, True, "sum_dim_int_list_converter.py", ""),
    "sum_channels": (f(lambda s, a: a.sum(1)), [(1, 8, 5, 6)], R, True, "sum_dim_int_list_converter.py", ""),
    "amax_last": (f(lambda s, a: torch.amax(a, -1, keepdim=True)), [(1, 6, 32)], R, True, "amax_converter.py", ""),
    "amax_channels": (f(lambda s, a: torch.amax(a, 1)), [(1, 8, 5, 6)], R, True, "amax_converter.py", ""),
    "amin_last": (f(lambda s, a: torch.amin(a, -1)), [(2, 5, 24)], R, True, "amin_converter.py", ""),
    # softmax: over the channels dim (1 for channels-first nodes, else the last), channels <= 2040,
    # N*H*W <= 4096, total <= 524288
    "softmax_10": (m(nn.Softmax(-1)), [(1, 10)], R, True, "softmax_converter.py", ""),
    "softmax3_last": (m(nn.Softmax(-1)), [(2, 3, 16)], R, True, "softmax_converter.py", ""),
    "softmax4_last": (m(nn.Softmax(-1)), [(1, 2, 8, 16)], R, True, "softmax_converter.py",
                      "no conv/pool around: the node is not channels-first, its channels dim is the last"),
    "softmax4_dim1_after_conv": (f(lambda s, a: torch.softmax(s.mods[0](a), 1), nn.Conv2d(3, 16, 1)),
                                 [(1, 3, 5, 6)], R, True, "softmax_converter.py", "channels-first after a conv"),
    "softmax_2048": (m(nn.Softmax(-1)), [(1, 2048)], R, False, "softmax_converter.py", "channels > 2040"),
    "softmax_rows_4100": (m(nn.Softmax(-1)), [(4100, 8)], R, False, "softmax_converter.py", "N*H*W > 4096"),
    # pooling (channels-first format required): max pool stride <= 4096, any padding, no ceil_mode, no dilation
    "max_k2": (m(nn.MaxPool2d(2)), [(1, 8, 8, 10)], R, True, "max_pool2d_with_indices_converter.py", ""),
    "max_k3_s2_p1": (m(nn.MaxPool2d(3, 2, 1)), [(1, 16, 10, 14)], R, True, "max_pool2d_with_indices_converter.py",
                     ""),
    "max_k3_s3": (m(nn.MaxPool2d(3, 3)), [(1, 8, 9, 12)], R, True, "max_pool2d_with_indices_converter.py", ""),
    "max_6_channels": (m(nn.MaxPool2d(2)), [(1, 6, 8, 10)], R, True, "max_pool2d_with_indices_converter.py", ""),
    "max_batch2": (m(nn.MaxPool2d(2)), [(2, 8, 8, 10)], R, True, "max_pool2d_with_indices_converter.py", ""),
    "max_ceil": (m(nn.MaxPool2d(2, ceil_mode=True)), [(1, 8, 9, 7)], R, False,
                 "max_pool2d_with_indices_converter.py", "ceil_mode"),
    "max_dilation2": (m(nn.MaxPool2d(2, dilation=2)), [(1, 8, 9, 7)], R, False,
                      "max_pool2d_with_indices_converter.py", "dilation"),
    # avg pool: padding only with count_include_pad=True (a PAD with the zero point), no ceil_mode / divisor
    "avg_k2": (m(nn.AvgPool2d(2)), [(1, 8, 6, 8)], R, True, "avg_pool_2d_converter.py", ""),
    "avg_k3_p1_include_pad": (m(nn.AvgPool2d(3, 1, 1)), [(1, 8, 7, 9)], R, True, "avg_pool_2d_converter.py", ""),
    "avg_k3_p1_exclude_pad": (m(nn.AvgPool2d(3, 1, 1, count_include_pad=False)), [(1, 8, 7, 9)], R, False,
                              "avg_pool_2d_converter.py", "padding with count_include_pad=False"),
    "avg_ceil": (m(nn.AvgPool2d(2, ceil_mode=True)), [(1, 8, 9, 7)], R, False, "avg_pool_2d_converter.py", ""),
    "avg_divisor": (m(nn.AvgPool2d(2, divisor_override=3)), [(1, 8, 6, 8)], R, False, "avg_pool_2d_converter.py",
                    ""),
    "adaptive_1x1": (m(nn.AdaptiveAvgPool2d(1)), [(1, 8, 6, 9)], R, True, "adaptive_avg_pool_2d_converter.py", ""),
    "adaptive_2x3": (m(nn.AdaptiveAvgPool2d((2, 3))), [(1, 8, 6, 9)], R, True, "adaptive_avg_pool_2d_converter.py",
                     ""),
    "adaptive_4x4_of_6x9": (m(nn.AdaptiveAvgPool2d((4, 4))), [(1, 8, 6, 9)], R, False,
                            "adaptive_avg_pool_2d_converter.py", "output size does not divide the input"),
    # padding: constant_pad_nd any dims (shared qparams); aten.pad only mode reflect, and only if the user keeps
    # aten.pad from decomposition (preserve_ops): a new user's reflect pad is decomposed -> CPU
    "pad_w": (f(lambda s, a: F.pad(a, (2, 1))), [(1, 8, 5, 6)], R, True, "constant_pad_nd_converter.py", ""),
    "pad_channels": (f(lambda s, a: F.pad(a, (0, 0, 0, 0, 1, 2))), [(1, 8, 4, 6)], R, True,
                     "constant_pad_nd_converter.py", ""),
    "pad_reflect": (f(lambda s, a: F.pad(a, (1, 1, 2, 2), mode="reflect")), [(1, 8, 5, 6)], R, False,
                    "pad_converter.py", "aten.pad decomposed to reflection_pad2d without preserve_ops"),
    # prelu: broadcast condition; rank > 2 with a slope per channel needs a channels-first node
    "prelu_8": (m(nn.PReLU(8, 0.1)), [(1, 8, 5, 6)], R, True, "prelu_converter.py", ""),
    "prelu_6_channels": (m(nn.PReLU(6, 0.1)), [(1, 6, 4, 5)], R, True, "prelu_converter.py", ""),
    "prelu_rows_5120": (m(nn.PReLU(8, 0.1)), [(1, 8, 80, 64)], R, True, "prelu_converter.py", ""),
    "prelu_rank3_shared": (m(nn.PReLU(1, 0.2)), [(1, 8, 20)], R, True, "prelu_converter.py", "slope shape (1,)"),
    "prelu_rank2": (m(nn.PReLU(16, 0.2)), [(3, 16)], R, True, "prelu_converter.py", ""),
    # matrix products and convolutions
    "linear": (m(nn.Linear(16, 8)), [(5, 16)], R, True, "addmm_converter.py", ""),
    "conv3x3": (m(nn.Conv2d(3, 8, 3)), [(1, 3, 9, 10)], R, True, "convolution_converter.py", ""),
    "depthwise": (m(nn.Conv2d(8, 8, 3, groups=8)), [(1, 8, 9, 10)], R, True, "convolution_converter.py", ""),
    # upsampling: scales 1, 2, 4, 8
    "nearest_x2": (m(nn.Upsample(scale_factor=2)), [(1, 8, 3, 5)], R, True, "upsample_nearest2d_converter.py", ""),
    "nearest_x8": (m(nn.Upsample(scale_factor=8)), [(1, 8, 2, 3)], R, True, "upsample_nearest2d_converter.py", ""),
    "nearest_6_channels": (m(nn.Upsample(scale_factor=2)), [(1, 6, 3, 4)], R, True,
                           "upsample_nearest2d_converter.py", ""),
    "nearest_x3": (m(nn.Upsample(scale_factor=3)), [(1, 8, 3, 4)], R, False, "upsample_nearest2d_converter.py",
                   "scale 3"),
    "bilinear_x8": (m(nn.Upsample(scale_factor=8, mode="bilinear")), [(1, 8, 2, 3)], R, True,
                    "upsample_bilinear2d_converter.py", ""),
    "bilinear_ac_5x9_to_9x17": (m(nn.Upsample(size=(9, 17), mode="bilinear", align_corners=True)), [(1, 8, 5, 9)],
                                R, True, "upsample_bilinear2d_converter.py", "align_corners: (out-1)/(in-1) = 2"),
    "bilinear_x3": (m(nn.Upsample(scale_factor=3, mode="bilinear")), [(1, 8, 3, 4)], R, False,
                    "upsample_bilinear2d_converter.py", "scale 3"),
    # data movement
    "cat_4_8": (f(lambda s, a, b: torch.cat([a, b], 1)), [(1, 4, 3, 5), (1, 8, 3, 5)], R, True,
                "cat_converter.py", ""),
    "slice_w": (f(lambda s, a: a[:, :, :, 1:5]), [(1, 8, 5, 6)], R, True, "slice_copy_tensor_converter.py", ""),
    "slice_step2": (f(lambda s, a: a[:, :, ::2]), [(1, 8, 6, 4)], R, False, "slice_copy_tensor_converter.py",
                    "step != 1"),
}


def _inputs(shapes, kind, seed):
    g = torch.Generator().manual_seed(seed)
    if kind == P:
        return tuple(torch.rand(*s, generator=g) * 3 + 0.05 for s in shapes)
    return tuple(torch.randn(*s, generator=g) for s in shapes)


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
    if report.rejections:
        j = report.rejections[0]
        return False, f"{j.op}: {j.reason}"[:160]
    return bool(report.partitions), "" if report.partitions else "no partition"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.ERROR, format="%(message)s")
    logging.getLogger("executorch_neutron").setLevel(logging.DEBUG if args.verbose else logging.ERROR)
    gaps, beyond, agree = [], [], 0
    print(f"{'case':28} {'NXP':4} {'ours':4}  NXP converter / our reason")
    for name in args.cases:
        make, shapes, kind, nxp, source, note = CASES[name]
        ours, reason = verdict(make, shapes, kind)
        mark = "" if ours == nxp else ("  <-- GAP" if nxp else "  (beyond NXP)")
        print(f"{name:28} {'NPU' if nxp else 'CPU':4} {'NPU' if ours else 'CPU':4}  {source}"
              f"{' (' + note + ')' if note else ''}{mark}")
        if reason:
            print(f"{'':38}ours: {reason}")
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


if __name__ == "__main__":
    main()

"""Shape operators, reductions and 3-D pools that ExecuTorch's backend test suite uses alone (issue 25 item 2):
each converted at the converter level (`harness.convert_and_run`: edge program -> TFLite -> LiteRT) for a Neutron
and an Ethos-U target and compared with PyTorch's quantized model within 1 output step; and the ones that stay on
the CPU, with their reasons."""

import pytest
import torch
from torch import nn

from harness import Fn, assert_within_steps, convert_and_run

from executorch_neutron import lower

TARGETS = ("imxrt700", "imx93")


def x(*shape):
    return (torch.randn(*shape),)


# name: (model factory, inputs, edge ops delegated); the suite's shapes where they are small
CASES = {
    # a half-pixel bilinear halving is a 2-wide average pool (passes/resize_halve_to_pool.py)
    "bilinear_halve": (lambda: nn.Upsample(scale_factor=0.5, mode="bilinear"), x(2, 3, 8, 7),
                       {"aten.avg_pool2d.default": 1}),
    "bilinear_halve_w": (lambda: nn.Upsample(size=(6, 4), mode="bilinear"), x(1, 3, 6, 8),
                         {"aten.avg_pool2d.default": 1}),
    "squeeze_all": (lambda: Fn(lambda s, a: torch.squeeze(a)), x(1, 3, 1, 5), {"aten.squeeze_copy.dims": 1}),
    "squeeze_dim": (lambda: Fn(lambda s, a: torch.squeeze(a, 2)), x(3, 4, 1, 5), {"aten.squeeze_copy.dims": 1}),
    "unsqueeze_rank1": (lambda: Fn(lambda s, a: torch.unsqueeze(a, 0)), x(5), {"aten.unsqueeze_copy.default": 1}),
    "unsqueeze_rank3": (lambda: Fn(lambda s, a: torch.unsqueeze(a, -1)), x(3, 4, 5), {"aten.unsqueeze_copy.default": 1}),
    # a reduction to a 0-d scalar runs with keepdim on the NPU (passes/reduce_all_keepdim.py); the reshape to ()
    # stays on the CPU (a lone view)
    "mean_all_rank2": (lambda: Fn(lambda s, a: torch.mean(a)), x(10, 12), {"aten.mean.dim": 1}),
    "mean_all_rank1": (lambda: Fn(lambda s, a: torch.mean(a, dim=0)), x(20), {"aten.mean.dim": 1}),
    "mean_dims_rank4": (lambda: Fn(lambda s, a: torch.mean(a, dim=(0, 1, 2, 3))), x(2, 3, 4, 5), {"aten.mean.dim": 1}),
    "mean_dims_batch2": (lambda: Fn(lambda s, a: torch.mean(a, dim=(1, 2))), x(2, 3, 4, 5), {"aten.mean.dim": 1}),
    "amax_all_rank3": (lambda: Fn(lambda s, a: torch.amax(a)), x(3, 4, 5), {"aten.amax.default": 1}),
    "amin_dims_rank2": (lambda: Fn(lambda s, a: torch.amin(a, dim=(0, 1))), x(5, 10), {"aten.amin.default": 1}),
    "amax_single": (lambda: Fn(lambda s, a: torch.amax(a, dim=0)), x(1), {"aten.amax.default": 1}),
    # stack is unsqueezes and a cat before quantization (passes/stack_to_cat.py)
    "stack_dim0": (lambda: Fn(lambda s, a, b, c: torch.stack([a, b, c], 0)), x(3, 4) + x(3, 4) + x(3, 4),
                   {"aten.cat.default": 1, "aten.unsqueeze_copy.default": 3}),
    "stack_last": (lambda: Fn(lambda s, a, b, c: torch.stack([a, b, c], -1)), x(2, 3, 4) + x(2, 3, 4) + x(2, 3, 4),
                   {"aten.cat.default": 1, "aten.unsqueeze_copy.default": 3}),
    "stack_rank1": (lambda: Fn(lambda s, a, b: torch.stack([a, b], 1)), x(5) + x(5),
                    {"aten.cat.default": 1, "aten.unsqueeze_copy.default": 2}),
    # 3-D max pools as a 2-D pool over (H, W) and one over D (passes/pool3d_to_pool2d.py), between reshapes
    "max_pool3d": (lambda: nn.MaxPool3d(2), x(1, 4, 6, 8, 10),
                   {"aten.max_pool2d_with_indices.default": 2, "aten.view_copy.default": 3}),
    # (its padding is written as replicated edges by passes/max_pool_padding.py: slices and cats)
    "max_pool3d_pad": (lambda: nn.MaxPool3d(3, 2, 1), x(2, 3, 7, 9, 8),
                       {"aten.max_pool2d_with_indices.default": 2, "aten.view_copy.default": 3,
                        "aten.cat.default": 2, "aten.slice_copy.Tensor": 3}),
    # 3-D averages as one 2-D convolution over (H, W) with the D planes as input channels
    "avg_pool3d": (lambda: nn.AvgPool3d(2), x(1, 4, 6, 8, 10), {"aten.convolution.default": 1, "aten.view_copy.default": 2}),
    "avg_pool3d_padded": (lambda: nn.AvgPool3d(2, 2, 1), x(1, 4, 8, 8, 8),
                          {"aten.convolution.default": 1, "aten.view_copy.default": 2}),
    "avg_pool3d_stride": (lambda: nn.AvgPool3d((3, 2, 2), (1, 2, 2)), x(4, 5, 8, 6),
                          {"aten.convolution.default": 1, "aten.view_copy.default": 2}),
    "adaptive_avg_pool3d": (lambda: nn.AdaptiveAvgPool3d((2, 4, 5)), x(2, 4, 6, 8, 10),
                            {"aten.convolution.default": 1, "aten.view_copy.default": 2}),
}
#: the reshape of the scalar reduction's result to () is a view, alone on the CPU
SCALAR_VIEW = {"aten.view_copy.default"}


#: (case, target) -> the ops delegated beside the case's: on Ethos-U a mean over C and H of a batch runs on a
#: one-image view (passes/batch_split.py; Vela's MEAN takes batch 1 only)
VIEWED = {("mean_dims_batch2", "imx93"): {"aten.view_copy.default": 2}}


DELEGATED = [(n, t) for n in CASES for t in TARGETS]


@pytest.mark.parametrize("name, target", DELEGATED, ids=[f"{n}-{t}" for n, t in DELEGATED])
def test_delegated(name, target):
    make, inputs, ops = CASES[name]
    torch.manual_seed(0)
    r = convert_and_run(make(), inputs, target=target)
    assert {j.op for j in r.rejections} <= SCALAR_VIEW, [rej.message() for rej in r.rejections]
    assert r.delegated_ops == ops | VIEWED.get((name, target), {})
    for out, ref, scale in zip(r.outputs, r.references, r.output_scales):
        assert_within_steps(out, ref, steps_allowed=1, scale=scale)


# name: (model factory, inputs, the edge op left on the CPU, a part of its reason per target)
NO_KERNEL = {
    "argmax": (lambda: Fn(lambda s, a: torch.argmax(a, dim=1)), x(3, 4, 5), "aten.argmax.default",
               {"imxrt700": "ARG_MAX / ARG_MIN are in neither", "imx93": "int64 index"}),
    "argmin": (lambda: Fn(lambda s, a: torch.argmin(a)), x(5, 10), "aten.argmin.default",
               {"imxrt700": "ARG_MAX / ARG_MIN are in neither", "imx93": "no ARG_MIN"}),
    "expand_prime": (lambda: Fn(lambda s, a: a.expand(17, 4)), x(1, 4), "aten.expand_copy.default",
                     {"imxrt700": "prime factor above 16", "imx93": "prime factor above 16"}),
    "adaptive_avg_pool3d_overlapping": (lambda: nn.AdaptiveAvgPool3d((6, 6, 6)), x(1, 4, 8, 8, 8),
                                        "aten._adaptive_avg_pool3d.default",
                                        {"imxrt700": "does not divide the input size [8, 8, 8]", "imx93": "Vela pools 2-D planes only"}),
    "avg_pool3d_exclusive": (lambda: nn.AvgPool3d(2, (1, 2, 2), (0, 1, 1), count_include_pad=False), x(1, 4, 8, 10, 10),
                             "aten.avg_pool3d.default", {"imxrt700": "count_include_pad=False with padding [0, 1, 1]",
                                                         "imx93": "count_include_pad=False"}),
    "avg_pool3d_ceil": (lambda: nn.AvgPool3d(3, 2, 1, ceil_mode=True), x(1, 4, 10, 10, 10), "aten.avg_pool3d.default",
                        {"imxrt700": "ceil_mode: output [6, 6, 6]", "imx93": "window over the edge"}),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", NO_KERNEL.values(), ids=NO_KERNEL.keys())
def test_no_kernel_reason(case, target):
    """What no NPU kernel computes stays on the CPU with the registry's reason for the target's back end."""
    make, inputs, op, reason = case
    r = lower(make().eval(), inputs, [inputs], target=target)
    assert not r.report.partitions
    reasons = [j.reason for j in r.report.rejections if j.op == op]
    assert reasons and reason[target] in reasons[0], [j.message() for j in r.report.rejections]

"""Common layers after a convolution (conv -> idiom, 1x4x8x8) lowered whole through `lower()` on Neutron
(imxrt700) and Ethos-U (imx93): softplus, mish, selu, celu, layer norm over (H, W) and (C, H, W), instance norm with
and without affine, var. Each is written from table ops before quantization (passes/softplus_decompose.py,
elu_decompose.py, layer_norm_decompose.py, group_norm_decompose.py, var_decompose.py): one partition, nothing left
on the CPU, and the .pte run on ExecuTorch's runtime with the host back ends against PyTorch's quantized model
(convert_pt2e) of the same graph.

Bounds (output steps): the activations 1 (every op of the rewrite is one int8 op of the same graph in both; the
convolution's and the pieces' roundings agree to a step); selu 2: it ends in a scaling by 1.0507, so a one-step
rounding difference before it (the convolution's is 1.17 output steps here after selu's slope, the sum's 1.0) carries
into the output, and the scaling rounds once more (2 measured, on both targets). Layer and instance norm 3, as
GroupNorm in tests/models/test_norm_shuffle_layers.py: the int8 RSQRT and PyTorch's float rsqrt + rounding may differ
by a step of the per-row factor, which moves each value by |x - mean| * s_factor / s_out steps, before the last op's
own step. var 2: the spatial mean's integer rounding and the scaling's (tests/ops/test_suite_gap_ops.py)."""

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.models.zoo import calibration
from harness import pte_steps


class _ConvThen(nn.Module):
    def __init__(self, then):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.then = then

    def forward(self, x):
        return self.then(self.conv(x))


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _affine(layer):
    with torch.no_grad():  # a trained-looking affine (the default is the identity)
        for p in layer.parameters():
            p.uniform_(0.5, 1.5)
    return layer


# name: (layer after the conv, max output steps)
IDIOMS = {
    "softplus": (lambda: nn.Softplus(), 1),
    "softplus_beta_2": (lambda: nn.Softplus(beta=2.0), 1),
    "mish": (lambda: nn.Mish(), 1),
    "selu": (lambda: nn.SELU(), 2),
    "celu": (lambda: nn.CELU(alpha=0.5), 1),
    "layer_norm_hw": (lambda: _affine(nn.LayerNorm([8, 8])), 3),
    "layer_norm_chw": (lambda: nn.LayerNorm([4, 8, 8], elementwise_affine=False), 3),
    "instance_norm": (lambda: nn.InstanceNorm2d(4), 3),
    "instance_norm_affine": (lambda: _affine(nn.InstanceNorm2d(4, affine=True)), 3),
    "var_hw": (lambda: _Fn(lambda x: x.var((2, 3), keepdim=True)), 2),
}


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
@pytest.mark.parametrize("name", IDIOMS)
def test_idiom_after_a_conv_on_the_npu(name, target):
    make, bound = IDIOMS[name]
    torch.manual_seed(0)
    model = _ConvThen(make()).eval()
    inputs = (torch.randn(1, 4, 8, 8),)
    calib = [inputs] + calibration(inputs, 4)
    result = lower(model, inputs, calib, target=target)
    report = result.report
    assert len(report.partitions) == 1 and report.rejections == [], str(report)
    worst = pte_steps(result, calib[:4])
    print(f"{name} on {target}: max {worst} steps")
    assert worst <= bound, f"max {worst} steps > {bound}"

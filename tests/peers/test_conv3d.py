"""Issue 36, cause 2: a Conv3d model (as Arm's and NXP's suites write one) must not give a .pte that cannot run.

Before: the 3-D convolution stayed a float CPU op, and ExecuTorch's portable kernels have none (the run failed with
error 0x12). Now passes/conv3d_to_conv2d.py writes it as one 2-D convolution per output depth plane over the
concatenated tap planes, all on the NPU, within 1 output step of PyTorch's quantized model."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from harness import pte_steps

TARGETS = ("imxrt700", "imx93")
# name: (Conv3d keyword arguments, input [N, C, D, H, W]); distinct D, H, W so a wrong axis cannot pass
CASES = {
    "k3_pad1": (dict(kernel_size=3, padding=1), (1, 4, 5, 8, 6)),
    "kd2_stride2": (dict(kernel_size=(2, 3, 3), stride=(2, 1, 1)), (1, 4, 6, 7, 5)),
    "grouped": (dict(kernel_size=3, padding=1, groups=2), (1, 4, 4, 6, 7)),
    "dilated_depth": (dict(kernel_size=(3, 1, 1), dilation=(2, 1, 1), padding=(2, 0, 0)), (1, 4, 5, 6, 6)),
}


def _lower(conv_kwargs, shape, target, relu=False):
    torch.manual_seed(0)
    conv = nn.Conv3d(shape[1], 8, **conv_kwargs)
    model = (nn.Sequential(conv, nn.ReLU()) if relu else conv).eval()
    samples = [(torch.randn(*shape),) for _ in range(4)]
    return lower(model, samples[0], samples, target=target), samples


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", CASES)
def test_conv3d_runs_on_the_npu(name, target):
    r, samples = _lower(*CASES[name], target)
    assert r.report.rejections == [] and len(r.report.partitions) == 1
    assert pte_steps(r, samples[:2]) <= 1


@pytest.mark.parametrize("target", TARGETS)
def test_conv3d_relu(target):
    """The relu reads the planes' concatenation (its own requantization), not each plane's convolution: one more
    rounding than a fused conv + relu, so within 2 steps."""
    r, samples = _lower(*CASES["k3_pad1"], target, relu=True)
    assert r.report.rejections == [] and len(r.report.partitions) == 1
    assert pte_steps(r, samples[:2]) <= 2

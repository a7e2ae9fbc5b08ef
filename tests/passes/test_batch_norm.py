"""Batch norm after conv (folded by prepare_pt2e) and after linear (folded by NeutronQuantizer's
fold_linear_batch_norm) never reaches the partitioner: one delegated conv / linear, nothing on the CPU."""

import math

import pytest
import torch
from torch import nn

from harness import assert_within_steps, lower_and_run


def trained(m, shape):
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(*shape) * 2)
    return m.eval()


CASES = {
    "conv_bn": (lambda: trained(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)), (2, 3, 7, 9)), (1, 3, 7, 9),
                {"aten.convolution.default": 1}),
    "linear_bn": (lambda: trained(nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16)), (4, 12)), (3, 12),
                  {"aten.linear.default": 1}),
    "conv1d_bn": (lambda: trained(nn.Sequential(nn.Conv1d(4, 8, 3), nn.BatchNorm1d(8)), (2, 4, 11)), (1, 4, 11),
                  None),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_batch_norm_is_folded(case):
    make, shape, ops = case
    torch.manual_seed(0)
    r = lower_and_run(make(), (torch.randn(*shape),))
    assert not r.rejections, str(r.result.report)
    assert not any("batch_norm" in op for op in r.delegated_ops)
    if ops is not None:
        assert r.delegated_ops == ops
    assert_within_steps(r.output, r.reference, 1, r.output_scale)


class MixedDepthwise(nn.Module):
    """MixNet's mixed-kernel depthwise conv: channel groups with 3x3 and 5x5 kernels, cat, then batch norm."""

    def __init__(self, c=16):
        super().__init__()
        self.k3 = nn.Conv2d(c // 2, c // 2, 3, padding=1, groups=c // 2)
        self.k5 = nn.Conv2d(c // 2, c // 2, 5, padding=2, groups=c // 2)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return torch.relu(self.bn(torch.cat((self.k3(a), self.k5(b)), 1)))


class AddThenNorm(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)

    def forward(self, x):
        return self.bn(x + self.conv(x))


STANDALONE = {  # name: (model, input shape, whether the batch norm reads a computed (int8, +-1 step) tensor)
    "mixnet_cat_bn": (lambda: trained(MixedDepthwise(16), (2, 16, 9, 11)), (1, 16, 9, 11), True),
    "input_bn2d": (lambda: trained(nn.Sequential(nn.BatchNorm2d(8), nn.Conv2d(8, 16, 1)), (2, 8, 6, 10)),
                   (1, 8, 6, 10), False),
    "add_bn2d": (lambda: trained(AddThenNorm(8), (2, 8, 7, 5)), (1, 8, 7, 5), True),
    "input_bn1d": (lambda: trained(nn.Sequential(nn.BatchNorm1d(24), nn.Conv1d(24, 8, 3)), (2, 24, 13)),
                   (1, 24, 13), False),
    # EfficientViT's classifier head: pooled features [N, C] -> BatchNorm1d -> Linear (a rank-2 batch norm)
    "pooled_bn1d_linear": (lambda: trained(nn.Sequential(nn.Conv2d(8, 12, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                                         nn.BatchNorm1d(12), nn.Linear(12, 10)), (2, 8, 9, 7)),
                           (1, 8, 9, 7), True),
}


def _bn_gain(model, quantized) -> float:
    """How many output steps one step of the batch norm's input moves its output: max |scale| * s_in / s_out."""
    bn = next(m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm))
    scale = float((bn.weight / torch.sqrt(bn.running_var + bn.eps)).abs().max())
    conv = next(n for n in quantized.graph.nodes  # the rewritten batch norm: the conv with one group per channel
                if "conv" in str(n.target) and len(n.args) == 7 and n.args[6] == bn.num_features)
    s_in = float(conv.args[0].args[1])
    out = next(iter(conv.users))
    while "quantize_per_tensor" not in str(out.target):  # past a fused activation
        out = next(iter(out.users))
    s_out = float(out.args[1])
    return scale * s_in / s_out


@pytest.mark.parametrize("case", STANDALONE.values(), ids=STANDALONE.keys())
def test_standalone_batch_norm_is_a_delegated_depthwise_conv(case):
    """A batch norm with no conv before it runs on the NPU as a per-channel scale + shift (a depthwise 1x1 conv),
    in the one partition of its neighbours. Bound: 1 step for the last op; when the batch norm reads a computed
    tensor, that tensor's own 1-step difference passes through the batch norm's gain (2.5 steps in mixnet_cat_bn)."""
    make, shape, computed = case
    torch.manual_seed(1)
    model = make()
    r = lower_and_run(model, (torch.randn(*shape),))
    assert not r.rejections, str(r.result.report)
    assert len(r.result.report.partitions) == 1
    assert not any("batch_norm" in op for op in r.delegated_ops)
    bound = 1 + (math.ceil(_bn_gain(model, r.result.quantized_model)) if computed else 0)
    assert_within_steps(r.output, r.reference, bound, r.output_scale)

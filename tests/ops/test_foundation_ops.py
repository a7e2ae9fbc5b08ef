"""Per-op and per-fused-pattern tests: TFLite in LiteRT vs PyTorch's quantized model, within 1 output step."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness import Fn, assert_within_steps, lower_and_run



def conv_bn(cin, cout, k, **kw):
    m = nn.Sequential(nn.Conv2d(cin, cout, k, **kw), nn.BatchNorm2d(cout))
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(2, cin, 12, 9) * 2)
    return m.eval()


def x(*shape):
    return (torch.randn(*shape),)


CASES = {
    "conv_k3_s1": (lambda: nn.Conv2d(3, 8, 3), x(1, 3, 9, 7), {"aten.convolution.default": 1}),
    "conv_k3_pad1_same": (lambda: nn.Conv2d(5, 16, 3, padding=1), x(1, 5, 10, 6), {"aten.convolution.default": 1}),
    "conv_k3_s2_pad1": (lambda: nn.Conv2d(4, 8, 3, stride=2, padding=1), x(1, 4, 11, 8), {"aten.convolution.default": 1}),
    "conv_k5_pad2_s2_explicit": (lambda: nn.Conv2d(3, 8, 5, stride=2, padding=2), x(1, 3, 12, 9),
                                 {"aten.convolution.default": 1}),
    "conv_1x1_nobias": (lambda: nn.Conv2d(6, 8, 1, bias=False), x(1, 6, 5, 7), {"aten.convolution.default": 1}),
    "dw_k3": (lambda: nn.Conv2d(8, 8, 3, groups=8, padding=1), x(1, 8, 10, 6), {"aten.convolution.default": 1}),
    "dw_k3_s2": (lambda: nn.Conv2d(16, 16, 3, stride=2, groups=16, padding=1), x(1, 16, 9, 12),
                 {"aten.convolution.default": 1}),
    "grouped_g4_bn_relu": (lambda: nn.Sequential(conv_bn(16, 32, 3, padding=1, groups=4), nn.ReLU()),
                           x(1, 16, 7, 6), {"aten.convolution.default": 1, "aten.relu.default": 1}),
    "grouped_g2_s2_relu6": (lambda: nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=2), nn.ReLU6()),
                            x(1, 16, 9, 11), {"aten.convolution.default": 1, "aten.hardtanh.default": 1}),
    "grouped_g3_k5_pad2_nobias": (lambda: nn.Conv2d(12, 24, 5, padding=2, groups=3, bias=False), x(1, 12, 8, 13),
                                  {"aten.convolution.default": 1}),
    "conv_bn_relu": (lambda: nn.Sequential(conv_bn(3, 8, 3, padding=1), nn.ReLU()), x(1, 3, 12, 9),
                     {"aten.convolution.default": 1, "aten.relu.default": 1}),
    "conv_relu6": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU6()), x(1, 3, 9, 7),
                   {"aten.convolution.default": 1, "aten.hardtanh.default": 1}),
    "conv_hardtanh_n1_1": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.Hardtanh(-1.0, 1.0)), x(1, 3, 9, 7),
                           {"aten.convolution.default": 1, "aten.hardtanh.default": 1}),
    "conv_clamp_0_1": (lambda: Fn(lambda s, a: torch.clamp(s.mods[0](a), 0, 1), nn.Conv2d(3, 8, 3)), x(1, 3, 9, 7),
                       {"aten.convolution.default": 1, "aten.clamp.default": 1}),
    "linear": (lambda: nn.Linear(24, 16), x(1, 24), {"aten.linear.default": 1}),
    "linear_relu": (lambda: nn.Sequential(nn.Linear(24, 16), nn.ReLU()), x(3, 24),
                    {"aten.linear.default": 1, "aten.relu.default": 1}),
    "relu": (lambda: nn.ReLU(), x(1, 8, 6, 5), {"aten.relu.default": 1}),
    "relu6": (lambda: nn.ReLU6(), x(1, 8, 6, 5), {"aten.hardtanh.default": 1}),
    "clamp_0_inf": (lambda: Fn(lambda s, a: torch.clamp(a, min=0)), x(1, 8, 6, 5), {"aten.clamp.default": 1}),
    "max_pool_2x2": (lambda: nn.MaxPool2d(2), x(1, 8, 10, 6), {"aten.max_pool2d_with_indices.default": 1}),
    "max_pool_3_s1_pad1": (lambda: nn.MaxPool2d(3, 1, 1), x(1, 16, 7, 9), {"aten.max_pool2d_with_indices.default": 1}),
    "avg_pool_2x2": (lambda: nn.AvgPool2d(2), x(1, 8, 10, 6), {"aten.avg_pool2d.default": 1}),
    "adaptive_avg_pool_1x1": (lambda: nn.AdaptiveAvgPool2d(1), x(1, 16, 7, 5),
                              {"aten.mean.dim": 1}),
    "mean_hw": (lambda: Fn(lambda s, a: a.mean(dim=(-1, -2), keepdim=True)), x(1, 8, 6, 7), {"aten.mean.dim": 1}),
    "add": (lambda: Fn(lambda s, a, b: a + b), (torch.randn(1, 8, 5, 6), torch.randn(1, 8, 5, 6) * 2),
            {"aten.add.Tensor": 1}),
    "add_relu": (lambda: Fn(lambda s, a, b: torch.relu(a + b)), (torch.randn(1, 8, 5, 6), torch.randn(1, 8, 5, 6)),
                 {"aten.add.Tensor": 1, "aten.relu.default": 1}),
    "mul": (lambda: Fn(lambda s, a, b: a * b), (torch.randn(1, 8, 5, 6), torch.randn(1, 8, 5, 6)),
            {"aten.mul.Tensor": 1}),
    "cat_channels": (lambda: Fn(lambda s, a, b: torch.cat([s.mods[0](a), s.mods[1](b)], 1), nn.Conv2d(3, 8, 1),
                                nn.Conv2d(3, 8, 1)), (torch.randn(1, 3, 5, 6), torch.randn(1, 3, 5, 6)),
                     {"aten.convolution.default": 2, "aten.cat.default": 1}),
    "view_flatten": (lambda: Fn(lambda s, a: s.mods[0](torch.flatten(a, 1)), nn.Linear(8 * 3 * 5, 16)),
                     x(1, 8, 3, 5), {"aten.view_copy.default": 1, "aten.linear.default": 1}),
    "permute": (lambda: Fn(lambda s, a: s.mods[0](a.permute(0, 2, 3, 1)), nn.Linear(8, 16)), x(1, 8, 3, 5),
                {"aten.permute_copy.default": 1, "aten.linear.default": 1}),
    "pad_hw": (lambda: Fn(lambda s, a: F.pad(a, (1, 2, 0, 1))), x(1, 8, 5, 6), {"aten.constant_pad_nd.default": 1}),
    "softmax_channels": (lambda: nn.Softmax(dim=-1), x(2, 16), {"aten._softmax.default": 1}),
    "softmax_nchw_dim1": (lambda: nn.Softmax(dim=1), x(1, 8, 3, 5), {"aten._softmax.default": 1}),
    "sigmoid": (lambda: nn.Sigmoid(), x(1, 8, 5, 6), {"aten.sigmoid.default": 1}),
    "tanh": (lambda: nn.Tanh(), x(1, 8, 5, 6), {"aten.tanh.default": 1}),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_op_matches_quantized_pytorch(case):
    make, inputs, expected_ops = case
    torch.manual_seed(0)
    r = lower_and_run(make().eval(), inputs)
    assert r.delegated_ops == expected_ops, str(r.result.report)
    for out, ref, scale in zip(r.outputs, r.references, r.output_scales):
        assert_within_steps(out, ref, 1, scale)

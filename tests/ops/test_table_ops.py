"""Every row of the documented Neutron operator table: supported cases lowered and run in LiteRT, compared with
PyTorch's quantized model within 1 output quantization step. Shapes use distinct N/C/H/W extents."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron.core.payload import unpack
from executorch_neutron.tflite.reader import op_name, read_model
from harness import Fn, assert_within_steps, lower_and_run



class Buffer(nn.Module):
    def __init__(self, fn, c):
        super().__init__()
        self.fn = fn
        self.register_buffer("c", c)

    def forward(self, *x):
        return self.fn(self, *x)


class AddMM(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) / k**0.5)
        self.b = nn.Parameter(torch.randn(n))

    def forward(self, a):
        return torch.addmm(self.b, a, self.w)


def f(fn, *mods):
    return lambda: Fn(fn, *mods)


def x(*shape):
    return (torch.randn(*shape),)


def conv(cin=3, cout=8):
    return nn.Conv2d(cin, cout, 1)


# name: (model factory, inputs, expected delegated ops)
CASES = {
    # activations
    "abs": (f(lambda s, a: torch.abs(a)), x(1, 8, 5, 6), {"aten.abs.default": 1}),
    "neg": (f(lambda s, a: -a), x(1, 8, 5, 6), {"aten.neg.default": 1}),
    "leaky_relu": (lambda: nn.LeakyReLU(0.1), x(1, 8, 5, 6), {"aten.leaky_relu.default": 1}),
    "leaky_relu_2d": (lambda: nn.LeakyReLU(0.2), x(3, 16), {"aten.leaky_relu.default": 1}),
    "hardswish": (lambda: nn.Hardswish(), x(1, 8, 5, 6), {"aten.hardswish.default": 1}),
    "sigmoid_3d": (lambda: nn.Sigmoid(), x(2, 8, 5), {"aten.sigmoid.default": 1}),
    "tanh_2d": (lambda: nn.Tanh(), x(3, 24), {"aten.tanh.default": 1}),
    "hardtanh_0_1": (lambda: nn.Hardtanh(0.0, 1.0), x(1, 8, 5, 6), {"aten.hardtanh.default": 1}),
    "clamp_n1_1": (f(lambda s, a: torch.clamp(a, -1, 1)), x(1, 8, 5, 6), {"aten.clamp.default": 1}),
    "clamp_0_6": (f(lambda s, a: torch.clamp(a, 0, 6)), x(2, 16), {"aten.clamp.default": 1}),
    # views and copies (inside a partition: no-op partitions are not created)
    "squeeze_dim": (f(lambda s, a: torch.relu(s.mods[0](a)).squeeze(2), conv()), x(1, 3, 1, 7),
                    {"aten.convolution.default": 1, "aten.relu.default": 1, "aten.squeeze_copy.dims": 1}),
    "squeeze_all": (lambda: Fn(lambda s, a: torch.relu(s.mods[0](a)).squeeze(), conv(3, 16)), x(1, 3, 1, 1),
                    {"aten.convolution.default": 1, "aten.relu.default": 1, "aten.squeeze_copy.dims": 1}),
    "unsqueeze": (f(lambda s, a: torch.relu(a).unsqueeze(1) * 2.0), x(2, 8, 4),
                  {"aten.relu.default": 1, "aten.unsqueeze_copy.default": 1, "aten.mul.Tensor": 1}),
    "view": (f(lambda s, a: torch.relu(a).reshape(1, 5, 48)), x(1, 8, 5, 6),
             {"aten.relu.default": 1, "aten.view_copy.default": 1}),
    "slice_c": (lambda: Fn(lambda s, a: torch.relu(s.mods[0](a))[:, 8:], conv(3, 16)), x(1, 3, 5, 6),
                {"aten.convolution.default": 1, "aten.relu.default": 1, "aten.slice_copy.Tensor": 1}),
    "slice_w": (f(lambda s, a: torch.relu(a)[:, :, :, 1:5]), x(1, 8, 5, 6),
                {"aten.relu.default": 1, "aten.slice_copy.Tensor": 1}),
    "split": (f(lambda s, a: [torch.relu(t) for t in torch.split(a, [8, 16], 1)]), x(1, 24, 3, 5),
              {"aten.slice_copy.Tensor": 2, "aten.relu.default": 2}),
    "permute_2d": (f(lambda s, a: torch.relu(a).permute(1, 0) * 2.0), x(8, 16),
                   {"aten.relu.default": 1, "aten.permute_copy.default": 1, "aten.mul.Tensor": 1}),
    # pooling
    "avg_pool1d": (lambda: nn.AvgPool1d(2), x(1, 8, 10), None),
    "max_pool1d": (lambda: nn.MaxPool1d(2), x(1, 8, 12), None),
    "avg_pool_3_s1_pad1": (lambda: nn.AvgPool2d(3, 1, 1, count_include_pad=False), x(1, 8, 7, 9),
                           {"aten.avg_pool2d.default": 1}),
    "adaptive_avg_2x3": (lambda: nn.AdaptiveAvgPool2d((2, 3)), x(1, 8, 6, 9), {"aten._adaptive_avg_pool2d.default": 1}),
    "max_pool_s2_k3": (lambda: nn.MaxPool2d(3, 2), x(1, 16, 9, 11), {"aten.max_pool2d_with_indices.default": 1}),
    "mean_neg_dims": (f(lambda s, a: a.mean(dim=[-2, -1])), x(1, 8, 6, 7), {"aten.mean.dim": 1}),
    # rank-3 means over the length, rewritten to the 4D mean (passes/mean1d_to_mean2d.py)
    "mean_1d_length": (f(lambda s, a: a.mean(-1)), x(1, 16, 21), None),
    "mean_1d_keepdim_relu": (f(lambda s, a: torch.relu(a).mean(2, keepdim=True) * 2.0), x(2, 8, 13), None),
    "adaptive_avg_pool1d": (f(lambda s, a: F.adaptive_avg_pool1d(torch.relu(a), 1)), x(1, 16, 30), None),
    # matrix products
    "mm": (f(lambda s, a, b: torch.mm(a, b)), (torch.randn(5, 16), torch.randn(16, 8)), {"aten.mm.default": 1}),
    "addmm": (lambda: AddMM(16, 8), x(5, 16), {"aten.addmm.default": 1}),
    "bmm": (f(lambda s, a, b: torch.bmm(a, b)), (torch.randn(2, 8, 16), torch.randn(2, 16, 24)),
            {"aten.bmm.default": 1}),
    # elementwise
    "add_2d": (f(lambda s, a, b: a + b), (torch.randn(3, 16), torch.randn(3, 16)), {"aten.add.Tensor": 1}),
    "mul_scalar": (f(lambda s, a: a * 0.75), x(1, 8, 5, 6), {"aten.mul.Tensor": 1}),
    "div_scalar": (f(lambda s, a: a / 3.0), x(1, 8, 5, 6), {"aten.mul.Tensor": 1}),
    "div_const": (lambda: Buffer(lambda s, a: a / s.c, torch.rand(1, 8, 1, 1) + 0.5), x(1, 8, 5, 6),
                  {"aten.mul.Tensor": 1}),
    "cat_2d": (f(lambda s, a, b: torch.cat([a, b], 1)), (torch.randn(3, 8), torch.randn(3, 16)),
               {"aten.cat.default": 1}),
    "pad_w": (f(lambda s, a: F.pad(torch.relu(a), (2, 1))), x(1, 8, 5, 6),
              {"aten.relu.default": 1, "aten.constant_pad_nd.default": 1}),
    # softmax
    "softmax_3d": (lambda: nn.Softmax(dim=-1), x(2, 3, 16), {"aten._softmax.default": 1}),
    # prelu
    "prelu_channels": (lambda: nn.PReLU(8, 0.1), x(1, 8, 5, 6), {"aten.prelu.default": 1}),
    "prelu_shared": (lambda: nn.PReLU(1, 0.2), x(1, 16, 3, 5), {"aten.prelu.default": 1}),
    # upsampling
    "up_nearest_2": (lambda: nn.Upsample(scale_factor=2, mode="nearest"), x(1, 8, 3, 5),
                     {"aten.upsample_nearest2d.vec": 1}),
    "up_nearest_4": (lambda: nn.Upsample(scale_factor=4, mode="nearest"), x(1, 16, 2, 3),
                     {"aten.upsample_nearest2d.vec": 1}),
    "up_bilinear_2": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), x(1, 8, 3, 5),
                      {"aten.upsample_bilinear2d.vec": 1}),
    "up_bilinear_4_ac": (lambda: nn.Upsample(scale_factor=4, mode="bilinear", align_corners=True), x(1, 8, 4, 3),
                         {"aten.upsample_bilinear2d.vec": 1}),
    # convolutions
    "conv1d": (lambda: nn.Conv1d(4, 8, 3, padding=1), x(1, 4, 11), None),
    "conv1d_dw_s2": (lambda: nn.Conv1d(8, 8, 3, stride=2, groups=8), x(1, 8, 13), None),
    "conv_dilated": (lambda: nn.Conv2d(3, 8, 3, dilation=2), x(1, 3, 9, 10), {"aten.convolution.default": 1}),
    "conv_t_k2_s2": (lambda: nn.ConvTranspose2d(8, 16, 2, stride=2), x(1, 8, 3, 5), {"aten.convolution.default": 1}),
    "conv_t_k3_s2_p1": (lambda: nn.ConvTranspose2d(4, 8, 3, stride=2, padding=1, output_padding=1), x(1, 4, 5, 3),
                        {"aten.convolution.default": 1}),
    "conv_t_k3_s1_relu": (lambda: nn.Sequential(nn.ConvTranspose2d(8, 8, 3), nn.ReLU()), x(1, 8, 4, 6),
                          {"aten.convolution.default": 1, "aten.relu.default": 1}),
    "conv_t1d_k4_s2_p1_relu": (lambda: nn.Sequential(nn.ConvTranspose1d(8, 16, 4, stride=2, padding=1), nn.ReLU()),
                               x(1, 8, 13), None),
    "conv_t1d_k3_s2_op1": (lambda: nn.ConvTranspose1d(4, 8, 3, stride=2, padding=1, output_padding=1), x(2, 4, 7),
                           None),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_table_op_matches_quantized_pytorch(case):
    make, inputs, expected_ops = case
    torch.manual_seed(0)
    r = lower_and_run(make().eval(), inputs)
    if expected_ops is not None:
        assert r.delegated_ops == expected_ops, str(r.result.report)
    assert not r.rejections, str(r.result.report)
    for out, ref, scale in zip(r.outputs, r.references, r.output_scales):
        assert_within_steps(out, ref, 1, scale)


CONV1D_DIRECT = {
    "k3_pad1": (lambda: nn.Conv1d(4, 8, 3, padding=1), x(1, 4, 11)),
    "dw_s2_relu": (lambda: nn.Sequential(nn.Conv1d(8, 8, 3, stride=2, groups=8), nn.ReLU()), x(1, 8, 13)),
    "k5_dil2": (lambda: nn.Conv1d(3, 16, 5, dilation=2, padding=3), x(2, 3, 17)),
}


@pytest.mark.parametrize("case", CONV1D_DIRECT.values(), ids=CONV1D_DIRECT.keys())
def test_conv1d_without_the_rewrite_pass(case, monkeypatch):
    """A rank-3 convolution that reaches the partitioner (no conv1d->conv2d pass) is converted directly."""
    from executorch_neutron.passes import pipeline

    monkeypatch.setattr(pipeline, "PIPELINE", ())
    make, inputs = case
    torch.manual_seed(0)
    r = lower_and_run(make().eval(), inputs)
    assert r.delegated_ops.get("aten.convolution.default") == 1, str(r.result.report)
    assert not r.rejections
    assert_within_steps(r.output, r.reference, 1, r.output_scale)


SOFTMAX_CHUNKED = {  # (shape, SOFTMAX ops in the TFLite)
    "rows": ((4100, 8), 2),  # 4096 rows + 4
    "elements": ((520, 1024), 2),  # 512 rows of 1024 (524288 elements) + 8
    "attention": ((2, 4, 640, 256), 3),  # 5120 rows of 256: 2048 + 2048 + 1024
}


@pytest.mark.parametrize("case", SOFTMAX_CHUNKED.values(), ids=SOFTMAX_CHUNKED.keys())
def test_large_softmax_is_chunked_within_one_softmax_limits(case):
    """A softmax larger than one Neutron SOFTMAX takes (4096 rows, 524288 elements) is delegated as row chunks:
    within 1 step of PyTorch's quantized model, every SOFTMAX within the limits, together covering every row."""
    shape, count = case
    torch.manual_seed(0)
    r = lower_and_run(nn.Softmax(-1).eval(), x(*shape))
    assert r.delegated_ops == {"aten._softmax.default": 1} and not r.rejections, str(r.result.report)
    assert_within_steps(r.output, r.reference, 1, r.output_scale)
    model = read_model(unpack(r.result.report.partitions[0].blob).tflite)
    sub = model.subgraphs[0]
    softmaxes = [op for op in sub.operators if op_name(model, op) == "SOFTMAX"]
    assert len(softmaxes) == count
    rows = []
    for op in softmaxes:
        s = list(sub.tensors[op.inputs[0]].shape)
        assert s[-1] == shape[-1] and s[0] <= 4096 and s[0] * s[-1] <= 524288, s
        rows.append(s[0])
    assert sum(rows) == int(np.prod(shape[:-1]))

"""Whole-model checks of NeutronQuantizer (PTQ): small CNNs with realistic batch-norm statistics quantize to an
int8 graph whose output stays close to the float model, and every op of the graph is int8 on both sides."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from quantizer_testing import DEQUANTIZE, QUANTIZE, input_dq, nodes, only, output_q, quantize_ptq, settle_batch_norm, sqnr_db

aten = torch.ops.aten


class InvertedResidual(nn.Module):
    """MobileNetV2 block: 1x1 expand + BN + ReLU6, 3x3 depthwise + BN + ReLU6, 1x1 project + BN, residual add."""

    def __init__(self, c: int = 8, expand: int = 4):
        super().__init__()
        h = c * expand
        self.block = nn.Sequential(
            nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(inplace=True),
            nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(inplace=True),
            nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c),
        )  # fmt: skip

    def forward(self, x):
        return x + self.block(x)


class SmallMobileNet(nn.Module):
    def __init__(self, classes: int = 5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU6())
        self.blocks = nn.Sequential(InvertedResidual(8), InvertedResidual(8))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, classes))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 12, 3, padding=1), nn.BatchNorm2d(12), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(12, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AvgPool2d(2),
        )  # fmt: skip
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 3, 10), nn.BatchNorm1d(10), nn.ReLU(), nn.Linear(10, 4))

    def forward(self, x):
        return self.classifier(self.features(x))


def _batches(shape, n, seed):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(shape, generator=g),) for _ in range(n)]


# batches of 8: a calibration set of a few samples would not cover the output range of a fresh sample
MODELS = {
    "mobilenetv2_block": (lambda: InvertedResidual(8), (8, 8, 10, 7)),
    "small_mobilenet": (SmallMobileNet, (8, 3, 20, 14)),
    "small_cnn": (SmallCNN, (8, 3, 16, 12)),
}


def _quantized(name):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make()
    settle_batch_norm(model, lambda: (torch.randn(shape),))
    calib = _batches(shape, 6, seed=1)
    gm = quantize_ptq(model, calib[0], calib=calib[1:])
    return model, gm, shape


@pytest.mark.parametrize("name", MODELS.keys())
def test_quantized_model_close_to_float(name):
    model, gm, shape = _quantized(name)
    assert not nodes(gm, aten.batch_norm.default, aten._native_batch_norm_legit_no_training.default)
    # measured on the calibration inputs: this bounds the quantization error itself; on held-out inputs of these
    # random-weight models, min/max ranges from a few dozen samples can clip heavy-tailed outputs
    calib = _batches(shape, 6, seed=1)
    ref = torch.cat([model(x) for (x,) in calib])
    out = torch.cat([gm(x) for (x,) in calib])
    assert sqnr_db(ref, out) > 20.0


@pytest.mark.parametrize("name", MODELS.keys())
def test_every_compute_op_is_int8(name):
    """No float islands: each aten op reads dequantized inputs and its output is quantized (or fused onward)."""
    _, gm, _ = _quantized(name)
    weighted = (aten.conv2d.default, aten.linear.default)
    activations = (aten.relu.default, aten.hardtanh_.default, aten.hardtanh.default)
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target in QUANTIZE | DEQUANTIZE or not str(node.target).startswith("aten."):
            continue
        if node.target in activations and node.args[0].target in weighted:
            continue  # fused into the conv/linear before it: checked with it
        acts = [a for a in node.args if isinstance(a, torch.fx.Node)]
        if node.target in weighted:
            acts = acts[:1]
        for a in acts:
            assert a.target in DEQUANTIZE, f"{node.name} reads a float tensor {a.name}"
        users = list(node.users)
        if node.target in weighted and users[0].target in activations:
            node = users[0]
        output_q(gm, node)


def test_mobilenetv2_residual_add_is_fully_int8():
    _, gm, _ = _quantized("mobilenetv2_block")
    add = only(gm, aten.add.Tensor)
    x_in, block_out = add.args
    for a in (x_in, block_out):
        qp = input_dq(gm, add, a)
        assert (qp.qmin, qp.qmax, qp.dtype) == (-128, 127, torch.int8)
    out = output_q(gm, add)
    assert (out.qmin, out.qmax, out.dtype) == (-128, 127, torch.int8)
    # depthwise conv: per-channel weights, one scale per channel
    dw = [n for n in nodes(gm, aten.conv2d.default) if n.args[6:7] == (32,)]
    assert len(dw) == 1
    assert input_dq(gm, dw[0], dw[0].args[1]).scale.numel() == 32


def test_quantized_model_exports_again():
    """The converted graph is exported again by the lowering flow."""
    model, gm, shape = _quantized("small_mobilenet")
    x = torch.randn(shape)
    ep = torch.export.export(gm, (x,))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert "quantized_decomposed.quantize_per_tensor.default" in targets
    assert "quantized_decomposed.dequantize_per_channel.default" in targets
    torch.testing.assert_close(ep.module()(x), gm(x))

"""QAT with NeutronQuantizer: prepare_qat_pt2e on conv+bn+relu (also conv1d and linear+bn1d), a few training steps,
convert: batch norm folded, LiteRT-style int8 parameters, output close to the float model; the converted model
lowered to a .pte that computes what it computes."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
from quantizer_testing import input_dq, nodes, output_q, quantize_qat, settle_batch_norm, sqnr_db
from torchao.quantization.pt2e.fake_quantize import FakeQuantize

from executorch_neutron import lower
from executorch_neutron.numerics import _output_scales
from executorch_neutron.runtime import run

aten = torch.ops.aten


class ConvBnReluNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, groups=8), nn.BatchNorm2d(8), nn.ReLU6(),
        )  # fmt: skip
        self.seq = nn.Sequential(nn.Conv1d(8, 8, 3), nn.BatchNorm1d(8), nn.ReLU())  # lowered to conv2d
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(8 * 38, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3))

    def forward(self, x):
        return self.head(self.seq(self.features(x).flatten(2)))


SHAPE = (8, 3, 10, 7)


def _data(n, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(SHAPE, generator=g) for _ in range(n)]


def test_qat_conv_bn_relu():
    """One model for all QAT checks: torchao's QAT conv+bn folding at convert costs about 30 s on 2 cores."""
    torch.manual_seed(0)
    model = ConvBnReluNet()
    settle_batch_norm(model, lambda: (torch.randn(SHAPE),), batches=16)
    train = _data(3, seed=1)
    with torch.no_grad():
        targets = [model.eval()(x) for x in train]  # distill the float model: training keeps it close
    step = iter(range(len(train)))

    def train_step(prepared):
        i = next(step)
        if not hasattr(train_step, "opt"):
            train_step.opt = torch.optim.SGD(prepared.parameters(), lr=1e-3)
        loss = (prepared(train[i]) - targets[i]).pow(2).mean()
        train_step.opt.zero_grad()
        loss.backward()
        train_step.opt.step()

    prepared, gm = quantize_qat(model, (train[0],), train_step, steps=3)
    assert any(isinstance(m, FakeQuantize) for m in prepared.modules()), "QAT must insert fake quantizers"

    assert not nodes(gm, aten.batch_norm.default, aten._native_batch_norm_legit_no_training.default)
    convs = nodes(gm, aten.conv2d.default)
    assert len(convs) == 3
    for conv in convs:
        x_qp = input_dq(gm, conv, conv.args[0])
        w_qp = input_dq(gm, conv, conv.args[1])
        b_qp = input_dq(gm, conv, conv.args[2])
        assert (w_qp.qmin, w_qp.qmax, w_qp.dtype, w_qp.axis) == (-127, 127, torch.int8, 0)
        assert torch.all(w_qp.zero_point == 0) and w_qp.scale.numel() == 8
        assert (b_qp.dtype, b_qp.axis) == (torch.int32, 0) and torch.all(b_qp.zero_point == 0)
        torch.testing.assert_close(b_qp.scale, x_qp.scale * w_qp.scale, rtol=1e-6, atol=0)
        act = list(conv.users)[0]  # fused activation, no q/dq between
        assert act.target in (aten.relu.default, aten.hardtanh.default), act.format_node()
        out = output_q(gm, act)
        assert (out.qmin, out.qmax, out.dtype) == (-128, 127, torch.int8)
    linear = nodes(gm, aten.linear.default)[0]
    assert list(linear.users)[0].target == aten.relu.default
    assert input_dq(gm, linear, linear.args[1]).axis == 0

    # vs float on the first training batch: after 3 steps the moving-average ranges (averaging constant 0.01)
    # are still those of that batch, and later batches' outliers of this random-weight net are clipped
    x0 = train[0]
    assert sqnr_db(model.eval()(x0), gm(x0)) > 15.0
    # the converted int8 model computes what the fake-quantized QAT model computes, on every input
    for x in [*train, *_data(1, seed=9)]:
        assert sqnr_db(prepared(x), gm(x)) > 25.0

    # the converted QAT model lowers as it is (quantize_model=False, the CLI's --qat) and the .pte on the host
    # runtime matches it; whole-model bound of tests/test_models.py (<= 3 steps, >= 95% within 1 step)
    result = lower(gm, (train[0],), quantize_model=False)
    assert result.report.partitions and not result.report.rejections, str(result.report)
    (scale,) = _output_scales(gm)
    for x in [train[0], *_data(1, seed=11)]:
        d = np.abs(run(result.pte, (x,))[0].numpy() - gm(x).detach().numpy()) / scale
        assert d.max() <= 3.01 and (d <= 1.01).mean() >= 0.95, f"max {d.max():.2f} steps"


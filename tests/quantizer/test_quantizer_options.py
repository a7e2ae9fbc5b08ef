"""NeutronQuantizer options: target validation, observers, per-tensor weights, modules kept float."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from quantizer_testing import QUANTIZE, input_dq, nodes, only, quantize_ptq, sqnr_db

from executorch_neutron.quantizer import NeutronQuantizer
from executorch_neutron.target import TARGETS, UnknownTargetError

pytestmark = pytest.mark.fast

aten = torch.ops.aten
X = (torch.randn(1, 3, 10, 7),)


def test_unknown_target_lists_valid_targets():
    with pytest.raises(UnknownTargetError) as err:
        NeutronQuantizer(target="imx8mp")
    for name in TARGETS:
        assert name in str(err.value)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_known_targets(target):
    q = NeutronQuantizer(target=target.upper())
    assert q.target.name == target
    assert NeutronQuantizer(target=TARGETS[target]).target is TARGETS[target]


def test_root_package_exports_quantizer():
    import executorch_neutron

    assert executorch_neutron.NeutronQuantizer is NeutronQuantizer


def test_unknown_observer():
    with pytest.raises(ValueError, match="minmax"):
        NeutronQuantizer(observer="percentile")


def test_histogram_observer():
    model = nn.Sequential(nn.Conv2d(3, 6, 3), nn.ReLU()).eval()
    gm = quantize_ptq(model, X, quantizer=NeutronQuantizer(observer="histogram"))
    conv = only(gm, aten.conv2d.default)
    assert input_dq(gm, conv, conv.args[0]).dtype == torch.int8
    assert sqnr_db(model(*X), gm(*X)) > 20.0


def test_per_tensor_weights():
    model = nn.Conv2d(3, 6, 3).eval()
    gm = quantize_ptq(model, X, quantizer=NeutronQuantizer(per_channel=False))
    conv = only(gm, aten.conv2d.default)
    x_qp, w_qp, b_qp = (input_dq(gm, conv, a) for a in conv.args[:3])
    assert w_qp.axis is None and w_qp.scale.numel() == 1 and int(w_qp.zero_point) == 0
    assert (w_qp.qmin, w_qp.qmax) == (-127, 127)
    assert b_qp.dtype == torch.int32 and b_qp.axis is None
    torch.testing.assert_close(b_qp.scale, x_qp.scale * w_qp.scale, rtol=1e-6, atol=0)


class TwoStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
        self.head = nn.Sequential(nn.Conv2d(4, 5, 1), nn.Sigmoid())

    def forward(self, x):
        return self.head(self.body(x))


@pytest.mark.parametrize("skip", [["head"], [nn.Sigmoid, "head.0"]], ids=["by_name", "by_type_and_name"])
def test_modules_to_skip_stay_float(skip):
    gm = quantize_ptq(TwoStage(), X, quantizer=NeutronQuantizer(modules_to_skip=skip))
    body_conv, head_conv = nodes(gm, aten.conv2d.default)
    assert input_dq(gm, body_conv, body_conv.args[1]).axis == 0  # body quantized
    assert head_conv.args[1].op == "get_attr"  # float weight: no dequantize
    sigmoid = only(gm, aten.sigmoid.default)
    assert not any(u.target in QUANTIZE for u in sigmoid.users)


def test_modules_to_skip_rejects_other_values():
    with pytest.raises(TypeError):
        NeutronQuantizer(modules_to_skip=[3])

"""Reasons for float nodes name their cause: an op of the user's model outside the operator table (which
ExecuTorch decomposed into several CPU nodes) or a model that was never quantized."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron import lower
from executorch_neutron.models.zoo import calibration
from harness import Fn


class HardshrinkGate(nn.Module):
    """linear -> x * hardshrink(x): hardshrink is not in the table (nor rewritten by a pass), so ExecuTorch
    decomposes it into abs, le, where, ..., some of which have kernels (they stay float) and some none."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Linear(8, 8)

    def forward(self, x):
        y = self.conv(x)
        return y * F.hardshrink(y)


def test_decomposed_float_op_is_named_in_every_reason():
    torch.manual_seed(0)
    inputs = (torch.randn(5, 8),)
    r = lower(HardshrinkGate().eval(), inputs, calibration(inputs, 4))
    cpu = r.report.rejections
    assert {x.op for x in cpu} >= {"aten.abs.default", "aten.le.Scalar", "aten.where.self"}, str(r.report)
    for x in cpu:
        assert "part of aten.hardshrink.default" in x.reason, x.reason
    float_ops = [x for x in cpu if x.reason.startswith("not quantized to int8")]
    assert float_ops and all("not in the Neutron operator table" in x.reason for x in float_ops)
    # the linear layer and the gating mul around it still run on the NPU
    assert r.report.delegated_ops == {"aten.linear.default": 1, "aten.mul.Tensor": 1}


def test_op_of_the_model_outside_the_table():
    """floor() is an op of the model itself (not decomposed): its reason is the operator's own (ops/no_kernel.py);
    the conv after it, quantized at its input by NeutronQuantizer, still runs on the NPU."""
    class FloorThenConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(8, 8, 1)

        def forward(self, x):
            return self.conv(torch.floor(x))

    torch.manual_seed(0)
    inputs = (torch.randn(1, 8, 5, 6),)
    r = lower(FloorThenConv().eval(), inputs, calibration(inputs, 4))
    reasons = {x.op: x.reason for x in r.report.rejections}
    assert reasons["aten.floor.default"] == ("no Neutron kernel for this operator: no int8 rounding kernel (TFLite's "
                                             "FLOOR and CEIL are float-only)"), reasons
    assert r.report.delegated_ops == {"aten.convolution.default": 1}, str(r.report)


NOTHING_QUANTIZED = {  # lower() on a model none of whose operators NeutronQuantizer quantizes: also the op's reason
    "division_by_a_tensor": (lambda s, a, b: a / b, ((1, 8, 4, 4), (1, 8, 4, 4)), "aten.div.Tensor",
                             "no division kernel"),
    "max_pool_indices": (lambda s, a: F.max_pool2d(a, 2, return_indices=True)[1].float(), ((1, 8, 6, 4),),
                         "aten.max_pool2d_with_indices.default", "indices are used"),
}


@pytest.mark.parametrize("case", NOTHING_QUANTIZED.values(), ids=NOTHING_QUANTIZED.keys())
def test_nothing_quantized_gives_the_operators_own_reason(case):
    """lower() did quantize, so 'quantize it with NeutronQuantizer' alone would send the user in a circle: the
    reason also gives the operator's own limit (a division by a tensor, used max-pool indices)."""
    fn, shapes, op, needle = case
    xs = tuple(torch.rand(*s) + 1 for s in shapes)
    r = lower(Fn(fn).eval(), xs, [xs])
    mine = [j.reason for j in r.report.rejections if j.op == op]
    assert mine and needle in mine[0] and "\n" not in mine[0], mine

"""Issue 36: a division by a tensor computed in the model that passes/div_by_tensor_to_rsqrt.py does not rewrite
stays a float division on the CPU, and its reason in the delegation report says what it is and what the NPU would
need (an int8 DIV no table has; a divisor known never to be negative and an RSQRT for the rewrite), not the generic
"output is not quantized". Lowered through lower() on a Neutron (imxrt700) and an Ethos-U (imx93) target."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from executorch_neutron import lower


class Ratio(nn.Module):
    """Two convolutions of one image, the first divided by `divisor` of the second."""

    def __init__(self, divisor):
        super().__init__()
        self.a, self.b, self.divisor = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(3, 8, 3, padding=1), divisor

    def forward(self, x):
        return self.a(x) / self.divisor(self.b(x))


def _div_reasons(divisor, target, **options):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    calib = [(torch.randn(1, 3, 9, 7, generator=g),) for _ in range(4)]
    r = lower(Ratio(divisor).eval(), calib[0], calib, target=target, **options)
    return [j.reason for j in r.report.rejections if j.op == "aten.div.Tensor"], r


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
def test_divisor_of_unknown_sign_says_why(target):
    reasons, r = _div_reasons(lambda b: b, target)
    assert len(reasons) == 1, r.report.rejections
    reason = reasons[0]
    assert "divisor aten_convolution" in reason and "its sign is not known" in reason, reason
    assert "there is no division kernel" in reason, reason
    assert "div_by_tensor_to_rsqrt" in reason and "runs on the CPU in float" in reason, reason
    assert "output is not quantized" not in reason and "\n" not in reason, reason


def test_table_without_rsqrt_says_so():
    """Neutron's documented table has no RSQRT: a divisor that is never negative still stays float, and the reason
    names the missing RSQRT instead of the divisor's sign."""
    reasons, r = _div_reasons(lambda b: 1 + b.abs(), "imxrt700", constraints="documented")
    assert len(reasons) == 1, r.report.rejections
    assert "this table (documented) has no RSQRT" in reasons[0], reasons[0]
    assert "sign" not in reasons[0].split(": no division kernel")[0], reasons[0]


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
def test_nonnegative_divisor_is_not_rejected(target):
    """The same model with a divisor that is never negative is rewritten and no division reaches the CPU."""
    reasons, _ = _div_reasons(lambda b: 1 + b.abs(), target)
    assert reasons == []

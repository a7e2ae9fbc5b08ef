"""int_scalars_to_float: `x * 2`, `x + 1`, `1 - x` on float tensors run on the NPU (an integer literal used to
become an int64 tensor and a float copy that nothing quantized, so the op stayed on the CPU), within 1 output step
of PyTorch's quantized model; integer arithmetic is left alone."""

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.passes.int_scalars_to_float import int_scalars_to_float
from executorch_neutron.models.zoo import calibration
from harness import Fn, pte_steps

aten = torch.ops.aten


class ConvTimesTwo(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(x) * 2


CASES = {
    "mul": lambda: Fn(lambda s, x: x * 2),
    "add": lambda: Fn(lambda s, x: x + 1),
    "rsub": lambda: Fn(lambda s, x: 1 - x),
    "sub": lambda: Fn(lambda s, x: x - 3),
    "conv_times_two": ConvTimesTwo,
}


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
@pytest.mark.parametrize("name", CASES)
def test_integer_literal_arithmetic_runs_on_the_npu(name, target):
    torch.manual_seed(0)
    x = (torch.randn(1, 3, 6, 6),)
    result = lower(CASES[name]().eval(), x, [x] + calibration(x, 4), target=target)
    assert len(result.report.partitions) == 1 and not result.report.rejections, str(result.report)
    assert pte_steps(result, [x]) <= 1


@pytest.mark.fast
def test_integer_arithmetic_and_alpha_are_left_alone():
    def literals(gm):
        return [a for n in gm.graph.nodes if n.op == "call_function" for a in n.args if isinstance(a, (int, float))]

    ints = torch.export.export(Fn(lambda s, i: i * 2 + 1), (torch.arange(4),), strict=False).module()
    assert literals(int_scalars_to_float(ints)) == [2, 1] and all(type(a) is int for a in literals(ints))
    alpha = torch.export.export(Fn(lambda s, x: torch.add(x, x, alpha=2)), (torch.randn(4),), strict=False).module()
    before = [(n.target, n.args, dict(n.kwargs)) for n in alpha.graph.nodes]
    assert [(n.target, n.args, dict(n.kwargs)) for n in int_scalars_to_float(alpha).graph.nodes] == before

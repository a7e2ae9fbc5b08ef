"""Bad input gives a clear error or a clear reason, never a wrong artifact."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from executorch_neutron import NeutronCompileSpec, NeutronPartitioner, NeutronQuantizer, lower
from executorch_neutron.runtime import run
from executorch_neutron.target import UnknownTargetError
from executorch_neutron.models.zoo import calibration
from harness import quantize_np, steps


@pytest.mark.parametrize("make", [
    lambda: NeutronCompileSpec(target="imx8mp"),
    lambda: NeutronQuantizer(target="imx8mp"),
    lambda: lower(nn.ReLU(), (torch.randn(1, 8),), target="imx8mp"),
], ids=["spec", "quantizer", "lower"])
def test_unknown_target_lists_valid_ones(make):
    with pytest.raises(UnknownTargetError, match="imx8mp.*imxrt700"):
        make()


def test_unquantized_model_is_not_delegated_with_reason():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
    r = lower(model, (torch.randn(1, 3, 9, 7),), quantize_model=False)
    assert r.report.partitions == []
    assert r.report.rejections and all("not quantized to int8: the model has no quantize nodes: quantize it with "
                                       "NeutronQuantizer" in x.reason for x in r.report.rejections)
    out = run(r.pte, [torch.ones(1, 3, 9, 7)])[0]  # still a valid, CPU-only .pte
    torch.testing.assert_close(out, model(torch.ones(1, 3, 9, 7)), rtol=1e-4, atol=1e-4)


class CpuOpInTheMiddle(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 16, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.a(x))
        y = torch.floor(y * 4.0)  # no Neutron kernel and not quantized: runs on the CPU in float
        return self.b(y)


def test_unsupported_op_in_the_middle_gives_two_correct_partitions():
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 10, 7),)
    r = lower(CpuOpInTheMiddle(), inputs, [inputs] + calibration(inputs, 4))
    assert len(r.report.partitions) == 2, str(r.report)
    assert {x.op for x in r.report.rejections} >= {"aten.floor.default"}
    out = run(r.pte, inputs)[0].numpy()
    with torch.no_grad():
        ref = r.quantized_model(*inputs).numpy()
    # both sides are dequantized int8 with the same output parameters: compare in steps of that scale
    scale = float(next(n for n in r.edge_program.exported_program().graph.nodes
                       if "dequantize_per_tensor" in str(n.target) and not n.users.keys() - {
                           *[u for u in n.users if u.op == "output"]}).args[1])
    d = steps(quantize_np(out, scale, 0), quantize_np(ref, scale, 0))
    assert d.max() <= 1, f"{d.max()} steps"


def test_dynamic_shapes_are_rejected_with_reason():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).eval()
    x = (torch.randn(2, 3, 9, 7),)
    dyn = {"input": {0: torch.export.Dim("batch", min=1, max=8)}}
    m = prepare_pt2e(torch.export.export(model, x, dynamic_shapes=dyn).module(), NeutronQuantizer())
    m(*x)
    m = convert_pt2e(m)
    partitioner = NeutronPartitioner(NeutronCompileSpec())
    from executorch.exir import to_edge_transform_and_lower

    to_edge_transform_and_lower(torch.export.export(m, x, dynamic_shapes=dyn), partitioner=[partitioner])
    reasons = {r.op: r.reason for r in partitioner.rejections}
    assert "dynamic shape" in reasons.get("aten.convolution.default", ""), reasons


def test_batch_norm_statistics_computed_in_forward_are_refused_with_the_fix():
    """PT2E's prepare folds a convolution -> batch norm pair and needs the statistics stored: a forward() that
    computes them (torch.zeros(C)) gets one line saying which operand and what to do, not torchao's ValueError."""
    from executorch_neutron import LoweringError

    class ComputedStats(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 1)

        def forward(self, x):
            return F.batch_norm(self.conv(x), torch.zeros(4), torch.ones(4))

    x = (torch.randn(1, 4, 8, 8),)
    with pytest.raises(LoweringError, match="takes its running_mean from a computation in forward"):
        lower(ComputedStats().eval(), x, [x])


@pytest.mark.parametrize("values, dtype, problem", [
    ([1.0, float("nan")], torch.float32, "input 0 holds NaN values"),
    ([float("-inf"), 1.0], torch.float64, "input 0 holds Inf values"),
    ([float("nan"), float("inf")], torch.float16, "input 0 holds NaN and Inf values"),
    ([3e38, -3e38], torch.float32, "input 0 spans [-3e+38, 3e+38]: the int8 scale would overflow float32"),
    ([1e300], torch.float64, "input 0 spans [1e+300, 1e+300]: the int8 scale would overflow float32"),
    ([-2.0, 3.0], torch.bfloat16, None),
], ids=["nan", "inf", "nan_and_inf", "float32_overflow", "float64_overflow", "clean"])
def test_calibration_sample_problems_are_named(values, dtype, problem):
    from executorch_neutron.models.loading import calibration_problem

    assert calibration_problem((torch.tensor(values, dtype=dtype),)) == problem
    assert calibration_problem((torch.arange(3), torch.empty(0))) is None  # integer and empty inputs are not checked


def test_lower_refuses_a_nan_calibration_sample_by_its_index():
    bad = torch.randn(1, 3, 8, 8)
    bad[0, 1, 2, 3] = float("nan")
    with pytest.raises(Exception, match="calibration sample 1: input 0 holds NaN values"):
        lower(nn.Conv2d(3, 4, 3), (torch.randn(1, 3, 8, 8),), [(torch.randn(1, 3, 8, 8),), (bad,)])

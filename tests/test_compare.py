"""compare(): float vs quantized PyTorch vs the .pte per output, and per partition at its boundary."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import executorch_neutron
from executorch_neutron.numerics import CompareResult, sqnr
from executorch_neutron.models.zoo import calibration


class TwoPartitions(nn.Module):
    """conv -> relu -> [sigmoid kept on the CPU] -> conv -> flatten -> linear: two NPU partitions."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 5 * 6, 16)

    def forward(self, x):
        y = torch.relu(self.a(x))
        y = torch.tanh(y)
        return self.fc(torch.flatten(self.b(y), 1))


def test_sqnr():
    a = np.array([3.0, 4.0])
    assert math.isinf(sqnr(a, a))
    assert sqnr(a, a + np.array([0.3, 0.4])) == pytest.approx(20.0)


@pytest.fixture(scope="module")
def two_partitions() -> CompareResult:
    torch.manual_seed(0)
    x = torch.randn(1, 3, 5, 6)
    calib = [(x,)] + calibration((x,), 4)
    return executorch_neutron.compare(TwoPartitions().eval(), (x,), calib,
                                      operators_not_to_delegate=("aten.tanh.default",))


def test_outputs(two_partitions):
    (out,) = two_partitions.outputs
    assert out.shape == [1, 16] and out.scale and out.scale > 0
    assert out.max_steps is not None and out.max_steps <= 2
    assert out.sqnr_db is not None and out.sqnr_db > 15
    assert out.top1_agreement_quantized is not None and out.top1_agreement_quantized >= 0.8
    assert two_partitions.samples == 5


def test_partitions_named(two_partitions):
    parts = two_partitions.partitions
    assert [p.tag for p in parts] == ["neutron_0", "neutron_1"]
    for p in parts:
        assert p.note == "" and p.max_steps <= 2 and p.sqnr_db is not None and p.sqnr_db > 20
    assert two_partitions.worst_partition.tag in {"neutron_0", "neutron_1"}
    text = str(two_partitions)
    assert "worst partition" in text and "SQNR vs float" in text
    assert two_partitions.to_dict()["worst_partition"] == two_partitions.worst_partition.tag


def test_needs_a_model():
    with pytest.raises(ValueError, match="needs a model"):
        executorch_neutron.compare()


def test_per_op_outputs_are_compared(two_partitions):
    """Each partition's op outputs (LiteRT intermediates) are matched to the quantized model's quantize nodes."""
    a, b = two_partitions.partitions
    assert [o.op for o in a.ops] == ["CONV_2D"]  # conv + fused relu: one op whose output has its own quantize node
    assert [o.op for o in b.ops][0] == "CONV_2D" and b.ops[-1].op == "FULLY_CONNECTED"
    for o in a.ops + b.ops:
        assert o.max_steps <= 1, o  # each op alone within 1 step of its quantized PyTorch op
    assert a.drift_start is None and "every op within 1 step" in str(two_partitions)
    assert a.once_max_steps is not None  # the same TFLite requantizing once ran too
    assert two_partitions.to_dict()["partitions"][0]["drift_start"] is None


def test_drift_start_is_the_first_op_beyond_one_step():
    from executorch_neutron.numerics import OpStats, PartitionStats

    ops = [OpStats("conv", "CONV_2D", 1, 0.1), OpStats("add", "ADD", 3, 0.2), OpStats("fc", "FULLY_CONNECTED", 9, 1)]
    p = PartitionStats("neutron_0", 9, 1.0, 20.0, ops=ops)
    assert p.drift_start.name == "add"
    text = str(CompareResult(1, [], [p]))
    assert "drift starts at add (ADD): 3 steps, then 9" in text


def test_double_rounding_is_named_when_rounding_once_is_closer():
    from executorch_neutron.numerics import PartitionStats

    p = PartitionStats("neutron_0", 1, 0.25, 47.5, once_max_steps=0, once_sqnr_db=math.inf)
    assert p.double_rounding
    assert "the difference is the double rounding of int8 requantization" in str(CompareResult(1, [], [p]))
    q = PartitionStats("neutron_0", 1, 0.25, 47.5, once_max_steps=1, once_sqnr_db=47.5)
    assert not q.double_rounding and "double rounding" not in str(CompareResult(1, [], [q]))


def test_per_op_layout_when_channels_equal_height_and_width():
    """C == H == W: the NHWC and NCHW shapes coincide, so the layout comes from the op, not from the shape."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1),
                          nn.Flatten(), nn.Linear(8 * 8 * 8, 16)).eval()
    x = torch.randn(1, 3, 8, 8)
    r = executorch_neutron.compare(model, (x,), [(x,)] + calibration((x,), 4))
    (p,) = r.partitions
    assert [o.op for o in p.ops] == ["CONV_2D", "CONV_2D", "RESHAPE", "FULLY_CONNECTED"]
    assert all(o.max_steps <= 1 for o in p.ops), p.ops

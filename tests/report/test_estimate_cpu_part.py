"""What the time estimate covers, as the report says it (issue 44): the CPU part is estimated on every target whose
CPU is known (imx93's Cortex-A55 too, beside Vela's NPU cycles), from the same per-node work the Neutron estimate
uses; where the CPU part dominates a Neutron total, the report says its generation's expected error (of the NPU part)
does not hold for it."""

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.core.cpu_estimate import cpu_estimate
from executorch_neutron.neutron import estimate
from executorch_neutron.target import get_target


class CumsumHead(nn.Module):
    """A small convolution on the NPU, then a cumulative sum (no NPU kernel) over a long row on the CPU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 1)

    def forward(self, x):
        return torch.cumsum(self.conv(x).flatten(1), dim=1)


@pytest.fixture(scope="module")
def lowered():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 16, 12)
    return {t: lower(CumsumHead().eval(), (x,), [(x,)], target=t) for t in ("imxrt700", "imx93")}


def test_imx93_adds_the_cortex_a55_part_to_velas_npu_cycles(lowered):
    report = lowered["imx93"].report
    total, target = report.estimate, get_target("imx93")
    npu = sum(p.estimate["inference_seconds"] for p in report.partitions)
    cycles = sum(max(m * target.cpu_cycles_per_mac, e * target.cpu_cycles_per_element) for _, e, m in report.cpu_work)
    assert total["npu_seconds"] == pytest.approx(npu) and total["cpu_cycles"] == round(cycles) > 0
    assert total["inference_seconds"] == pytest.approx(npu + cycles / 1.7e9)
    assert any("the CPU part" in n and "Cortex-A55 at 1.7 GHz" in n for n in report.estimate_notes)
    assert "+ CPU" in str(report)


def test_a_bare_ethos_u_configuration_says_its_cpu_part_is_not_estimated():
    target = get_target("ethos-u55-128")
    assert cpu_estimate([("aten.add.Tensor", 100, 0)], target)["cpu_seconds"] == 0.0


def test_neutron_says_when_the_cpu_part_is_most_of_the_total(lowered):
    report = lowered["imxrt700"].report
    total = report.estimate
    assert total["cpu_seconds"] > 0.5 * total["inference_seconds"]
    note = report.estimate_notes[-1]
    stated = estimate.calibration(get_target("imxrt700")).expected_error
    assert note.startswith("the CPU part is") and f"the NPU part's +-{100 * stated:.0f}% does not hold" in note
    assert any("on the NPU part" in n and "not covered: the CPU part" in n for n in report.estimate_notes)


def test_a_generation_without_measured_figures_states_no_error():
    """imx95 (Neutron-S): nothing published was timed on its generation, so where its CPU part dominates no
    expected error is claimed for the total either."""
    from executorch_neutron.neutron.plugin import estimate_notes

    notes = estimate_notes(get_target("imx95"), {"formula": "f", "cpu_seconds": 3e-3, "inference_seconds": 4e-3})
    assert "no measured figure for its generation (Neutron-S)" in notes[2]
    assert notes[-1].endswith("so no expected error holds for this total") and not any("+-" in n for n in notes)

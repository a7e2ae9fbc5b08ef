"""Host profiling: ETRecord from `lower()`, ETDump from the host runtime, read back by ExecuTorch's own Inspector."""

import warnings

import pytest
import torch
from executorch.devtools import Inspector
from torch import nn

from executorch_neutron import lower
from executorch_neutron.lowering import LoweringError
from executorch_neutron.profiling import profile
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration


class TwoPartitions(nn.Module):
    """floor() has no Neutron kernel: two Neutron delegate calls with CPU kernels in between."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 1)

    def forward(self, x):
        return torch.relu(self.conv2(torch.floor(torch.relu(self.conv1(x)) * 4)))


@pytest.fixture(scope="module")
def lowered():
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 9, 7),)
    result = lower(TwoPartitions().eval(), inputs, calibration(inputs, 4), etrecord=True)
    assert len(result.report.partitions) == 2, result.report
    return result, inputs


def _inspector(etdump, etrecord=None) -> Inspector:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return Inspector(etdump_path=str(etdump), etrecord=etrecord)


def _delegate_events(inspector):
    return [e for b in inspector.event_blocks for e in b.events if e.name == "DELEGATE_CALL"]


def test_run_writes_an_etdump_the_inspector_reads(lowered, tmp_path):
    result, inputs = lowered
    plain = run(result.pte, inputs)
    traced = run(result.pte, inputs, etdump=tmp_path / "run.etdp")
    for a, b in zip(plain, traced, strict=True):
        assert torch.equal(a, b)  # recording events does not change what is computed
    events = _delegate_events(_inspector(tmp_path / "run.etdp"))
    assert len(events) == 2 and all(len(e.perf_data.raw) == 1 for e in events)  # one call per partition
    etrecord = str(result.save_etrecord(tmp_path / "model.etrecord"))
    with_record = _delegate_events(_inspector(tmp_path / "run.etdp", etrecord))
    assert [e.delegate_backend_name for e in with_record] == ["NeutronBackend", "NeutronBackend"]


def test_etrecord_maps_delegate_calls_to_the_partitions_ops(lowered, tmp_path):
    result, inputs = lowered
    path = result.save_etrecord(tmp_path / "model.etrecord")
    prof = profile(result.pte, inputs, runs=3, etrecord=path, etdump_path=tmp_path / "p.etdp")
    assert (tmp_path / "p.etdp").is_file()
    delegates = prof.delegate_rows
    assert [r.name for r in delegates] == ["Neutron delegate 0", "Neutron delegate 1"]
    assert all(r.runs == 3 and r.backend == "NeutronBackend" and r.min_ms <= r.median_ms <= r.max_ms
               for r in delegates)
    # the Inspector's mapping (ETRecord + our debug handle map) names exactly the ops each partition holds
    for row, part in zip(delegates, result.report.partitions, strict=True):
        assert set(row.op_types) == set(part.ops), (row.op_types, part.ops)
        assert "CONV_2D" in row.detail
    cpu = [r.name for r in prof.rows if r.name.startswith("CPU kernel")]
    assert "CPU kernel floor.out" in cpu
    assert "not NPU cycles" in str(prof)
    # the in-memory ETRecord gives the same mapping
    again = profile(result.pte, inputs, runs=1, etrecord=result.etrecord)
    assert [r.op_types for r in again.delegate_rows] == [r.op_types for r in delegates]


def test_etrecord_does_not_change_the_pte(lowered):
    result, inputs = lowered
    torch.manual_seed(0)
    inputs_again = (torch.randn(1, 3, 9, 7),)
    plain = lower(TwoPartitions().eval(), inputs_again, calibration(inputs_again, 4))
    assert plain.pte == result.pte
    with pytest.raises(LoweringError, match="etrecord=True"):
        plain.save_etrecord("unused.etrecord")


def test_profile_needs_at_least_one_run(lowered):
    result, inputs = lowered
    with pytest.raises(ValueError, match="runs must be >= 1"):
        profile(result.pte, inputs, runs=0)

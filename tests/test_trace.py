"""`profile` writes a Chrome trace whose events are the Inspector's own: one track per delegate call and CPU kernel
call, one complete event per run, same start and duration."""

import json

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.cli import main
from executorch_neutron.profiling import profile

RUNS = 3


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Tanh(), nn.Conv2d(8, 8, 1)).eval()
    x = (torch.randn(1, 3, 6, 5),)
    result = lower(model, x, [x], operators_not_to_delegate=("aten.tanh.default",), etrecord=True)
    tmp = tmp_path_factory.mktemp("trace")
    return profile(result.pte, x, runs=RUNS, etrecord=result.etrecord, etdump_path=tmp / "m.etdp"), result, tmp


def _inspector_events(inspector):
    """The Inspector's timed execution events, in program order (not the load events, nor the `native_call_*`
    events that only name the OPERATOR_CALL after them)."""
    return [e for b in inspector.event_blocks for e in b.events
            if e.perf_data is not None and e.name not in ("Method::init", "Program::load_method")
            and not e.name.startswith("native_call_")]


def test_trace_events_are_the_inspectors(profiled):
    prof, _, tmp = profiled
    trace = json.loads(prof.save_trace(tmp / "m.trace.json").read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    tracks = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    expected = _inspector_events(prof.inspector)
    assert len(tracks) == len(expected)  # one track per delegate call, CPU kernel call and the method itself
    assert len(events) == RUNS * len(expected)
    for tid, want in enumerate(expected, start=1):
        got = sorted((e for e in events if e["tid"] == tid), key=lambda e: e["args"]["run"])
        assert [e["ts"] for e in got] == pytest.approx([t / 1e3 for t in want.start_time])  # ns -> us
        assert [e["dur"] for e in got] == pytest.approx([d * 1e3 for d in want.perf_data.raw])  # ms -> us
        if want.name == "DELEGATE_CALL":
            assert tracks[tid].startswith("Neutron delegate") and got[0]["cat"] == "delegate"
            assert "aten.convolution.default" in got[0]["args"]["model_ops"]
        elif want.name == "OPERATOR_CALL":
            assert tracks[tid].startswith("CPU kernel ") and got[0]["cat"] == "cpu"
    names = set(tracks.values())
    assert {"Neutron delegate 0", "Neutron delegate 1", "CPU kernel tanh.out"} <= names


def test_profile_command_writes_the_trace(profiled, tmp_path, capsys):
    _, result, _ = profiled
    pte = result.save(tmp_path / "m.pte")
    assert main(["profile", str(pte), "--random-input", "--runs", "2", "--trace", str(tmp_path / "t.json")]) == 0
    assert "Perfetto" in capsys.readouterr().out
    trace = json.loads((tmp_path / "t.json").read_text())
    delegate_events = [e for e in trace["traceEvents"] if e.get("cat") == "delegate"]
    assert len(delegate_events) == 2 * len(result.report.partitions)

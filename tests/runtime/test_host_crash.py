"""A crash of the host run is one line, never the end of the caller's process: `runtime.run`, lower()'s host check
(which then writes nothing), and the CLI's run / compare / profile.

The crash is a test-only fault injection: the executor's `run_program` (what runs a partition in LiteRT) replaced
by `os.abort()` — SIGABRT, no message, as a LiteRT `TFLITE_CHECK` ends a process. The host run forks the caller, so
the replacement reaches the child, and the test process must survive it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.cli import main
from executorch_neutron.pipeline import LoweringError
from executorch_neutron.runtime import HostRunCrashed, NeutronRuntimeError, executor, run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "npu"))
import fake_neutron_sdk as fake  # noqa: E402


class ConvRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


X = (torch.randn(1, 3, 8, 6, generator=torch.Generator().manual_seed(0)),)


@pytest.fixture(scope="module")
def lowered():
    torch.manual_seed(0)
    return lower(ConvRelu().eval(), X, [X])


def _abort_in_litert(monkeypatch):
    monkeypatch.setattr(executor, "run_program", lambda program, args: os.abort())


def _one_line_naming_the_call(message: str) -> None:
    assert "\n" not in message
    assert "crashed (SIGABRT)" in message
    assert "int8[1, 3, 8, 6]" in message and "int8[1, 8, 8, 6]" in message  # the delegate call's arguments


def test_run_turns_a_crash_into_one_line(lowered, monkeypatch):
    _abort_in_litert(monkeypatch)
    with pytest.raises(HostRunCrashed) as caught:
        run(lowered.pte, list(X))
    _one_line_naming_the_call(str(caught.value))
    assert "delegate 0 (NeutronBackend) of method 'forward'" in str(caught.value)
    monkeypatch.undo()  # the process lives on, and so does the host runtime
    torch.testing.assert_close(run(lowered.pte, list(X))[0], run(lowered.pte, list(X), isolated=False)[0])


def test_run_failure_keeps_its_message(lowered):
    with pytest.raises(NeutronRuntimeError, match="input 0 is torch.float32\\[1, 3, 8, 7\\]") as caught:
        run(lowered.pte, [torch.randn(1, 3, 8, 7)])
    assert not isinstance(caught.value, HostRunCrashed)


def test_lower_refuses_a_program_that_crashes_and_writes_nothing(monkeypatch, tmp_path):
    _abort_in_litert(monkeypatch)
    with pytest.raises(LoweringError) as caught:
        lower(ConvRelu().eval(), X, [X], intermediates_dir=str(tmp_path))
    _one_line_naming_the_call(str(caught.value))
    assert "partition neutron_0" in str(caught.value) and "nothing was written" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_host_check_is_a_stage_and_can_be_skipped(lowered, monkeypatch):
    assert lowered.timings["host_check"] > 0
    _abort_in_litert(monkeypatch)  # skipped: the crash goes unnoticed (what the option is for)
    assert "host_check" not in lower(ConvRelu().eval(), X, [X], host_check=False).timings


def test_host_check_of_microcode_runs_the_tflite_the_sdk_was_given(tmp_path, monkeypatch):
    """With the SDK (its test double) the payload is device microcode: the check runs the partition's TFLite the
    SDK was given, and names the partition when that crashes."""
    fake.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    result = lower(ConvRelu().eval(), X, [X])
    assert result.report.partitions[0].reference is None and result.timings["host_check"] > 0
    _abort_in_litert(monkeypatch)
    with pytest.raises(LoweringError, match="crashed \\(SIGABRT\\) in partition neutron_0 called with"):
        lower(ConvRelu().eval(), X, [X])


@pytest.mark.parametrize("command", ["run", "profile"])
def test_cli_says_one_line(lowered, command, monkeypatch, tmp_path, capsys):
    pte, npy = tmp_path / "m.pte", tmp_path / "x.npy"
    lowered.save(pte)
    np.save(npy, X[0].numpy())
    _abort_in_litert(monkeypatch)
    assert main([command, str(pte), "--input", str(npy)]) != 0
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "crashed (SIGABRT)" in errors[0], errors


def test_compare_says_one_line(lowered, monkeypatch):
    """numerics.compare (the CLI's compare) runs the .pte in a child: its crash is HostRunCrashed."""
    from executorch_neutron.numerics import compare

    _abort_in_litert(monkeypatch)
    with pytest.raises(HostRunCrashed, match="crashed \\(SIGABRT\\)"):
        compare(result=lowered, samples=[X])


CONV_RELU_FILE = '''
import torch
from torch import nn


def factory():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()).eval(), (torch.randn(1, 3, 8, 6),)
'''


def test_compile_refuses_a_crashing_program_unless_no_host_check(monkeypatch, tmp_path, capsys):
    """`compile` turns the check's crash into one error line naming --no-host-check and writes nothing; with
    --no-host-check it writes the .pte (the crash goes unnoticed: what the flag is for)."""
    (tmp_path / "m.py").write_text(CONV_RELU_FILE)
    pte = tmp_path / "m.pte"
    _abort_in_litert(monkeypatch)
    assert main(["compile", f"{tmp_path}/m.py:factory", "-o", str(pte), "--random-calibration"]) != 0
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "crashed (SIGABRT)" in errors[0] and "--no-host-check" in errors[0], errors
    assert not pte.exists()
    assert main(["compile", f"{tmp_path}/m.py:factory", "-o", str(pte), "--random-calibration",
                 "--no-host-check"]) == 0
    assert pte.is_file()

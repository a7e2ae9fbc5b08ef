"""`executorch-neutron report X.pte` prints the time estimate compile printed for the same program (issue 44): both
are computed independently, compile's from the lowering (the partitions' TFLite as the back end compiled them, the
CPU nodes of the lowered graph), report's from the .pte file alone (the TFLite the .pte carries, its kernel calls).
A payload that is device code without its TFLite has no estimate, and the report says why."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from executorch_neutron import cli

MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.flat = nn.Flatten()
        self.head = nn.Linear(8 * 5 * 4, 10)

    def forward(self, x):
        return self.head(self.flat(self.features(x)))


def factory():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 3, 20, 16),)
'''
#: on the CPU: the first convolution (MACs), the last max pool (two results), the flatten (a view), the head (addmm)
PRECISION = "features.0=float,features.5=float,flat=float,head=float"
TOTAL = re.compile(r"^(Neutron estimate|Vela's estimate): .* \(see the notes\)$", re.M)


def _cli(capsys, *argv) -> tuple[int, str]:
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out + ("" if code == 0 else captured.err)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("estimate") / "net.py"
    path.write_text(MODEL)
    return path


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
def test_report_prints_the_estimate_compile_printed(model_file, tmp_path, capsys, target):
    pte, saved = tmp_path / "net.pte", tmp_path / "net.json"
    code, compiled = _cli(capsys, "compile", f"{model_file}:factory", "--random-calibration", "--target", target,
                          "--precision", PRECISION, "-o", pte, "--report", saved)
    assert code == 0, compiled
    (line,) = [m.group(0) for m in TOTAL.finditer(compiled)]
    assert "+ CPU" in line  # both targets estimate their CPU part
    code, reported = _cli(capsys, "report", pte)
    assert code == 0, reported
    assert [m.group(0) for m in TOTAL.finditer(reported)] == [line], reported[-3000:]
    compile_estimate = json.loads(saved.read_text())["estimate"]
    for note in compile_estimate["notes"]:  # the same notes, worded as compile's
        assert note in reported
    code, out = _cli(capsys, "report", pte, "--json")
    assert code == 0, out
    estimate = json.loads(out)["estimate"]
    assert estimate["available"] is True
    for key in ("cycles", "inference_seconds", "cpu_cycles", "cpu_seconds", "cpu_nodes", "macs", "core_clock_hz"):
        assert estimate[key] == pytest.approx(compile_estimate[key], rel=1e-12), key
    assert [p["cycles"] for p in estimate["partitions"]] == [p["cycles"] for p in compile_estimate["partitions"]]
    assert estimate["notes"] == compile_estimate["notes"]


def test_a_vela_payload_without_its_reference_has_no_estimate_and_says_why(model_file, tmp_path, capsys):
    pte = tmp_path / "device.pte"
    code, out = _cli(capsys, "compile", f"{model_file}:factory", "--random-calibration", "--target", "imx93",
                     "--device-only", "-o", pte)
    assert code == 0, out
    code, reported = _cli(capsys, "report", pte)
    assert code == 0, reported
    assert not TOTAL.search(reported)
    assert ("estimate: not available: delegate 0's payload (ethos-u-vela) is device code without the partition's "
            "TFLite, which the estimate is made from") in reported
    code, out = _cli(capsys, "report", pte, "--json")
    estimate = json.loads(out)["estimate"]
    assert estimate["available"] is False and "device code without the partition's TFLite" in estimate["reason"]


def test_neutron_microcode_has_no_estimate_and_says_why(model_file, tmp_path, capsys, monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "npu"))
    import fake_neutron_sdk as fake

    fake.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    pte = tmp_path / "micro.pte"
    code, out = _cli(capsys, "compile", f"{model_file}:factory", "--random-calibration", "-o", pte)
    assert code == 0, out
    code, reported = _cli(capsys, "report", pte)
    assert code == 0, reported
    assert "estimate: not available: delegate 0's payload (neutron-microcode) is device code" in reported

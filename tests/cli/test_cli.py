"""The `executorch-neutron` command line through a subprocess: exit codes, outputs, files written, bad input.

Every subprocess imports torch (~5-10 s), so the tests are few and share one compiled .pte.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from executorch_neutron.report import load_schema

ROOT = Path(__file__).resolve().parents[2]
TINY = '''
import torch
from torch import nn

def factory():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 5, 8))
    return model.eval(), (torch.randn(1, 3, 4, 5),)
'''


def cli(*args, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "executorch_neutron", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd or ROOT, env=env, timeout=300)


def error_lines(proc) -> list[str]:
    return [l for l in proc.stderr.splitlines() if l.startswith(("error:", "hint:"))]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """`compile examples/ds_cnn.py:factory` with random calibration, a JSON report and intermediates."""
    out = tmp_path_factory.mktemp("cli")
    proc = cli("compile", "examples/ds_cnn.py:factory", "--random-calibration", "-o", out / "kws.pte",
               "--report", out / "kws.json", "--intermediates", out / "inter", "--etrecord", out / "kws.etrecord")
    return out, proc


def test_compile(compiled):
    out, proc = compiled
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Neutron delegation report" in proc.stdout and "MACs on the NPU" in proc.stdout
    assert "random data" in proc.stderr  # the --random-calibration warning
    assert (out / "kws.pte").stat().st_size > 1000
    assert (out / "inter" / "neutron_0.tflite").is_file()
    report = json.loads((out / "kws.json").read_text())
    jsonschema.validate(report, load_schema())
    assert report["totals"]["npu_macs"] == 2_656_768  # DS-CNN, hand-counted in the example's docstring terms
    assert report["totals"]["pte_bytes"] == (out / "kws.pte").stat().st_size


def test_run_and_report(compiled):
    out, _ = compiled
    np.save(out / "x.npy", np.random.default_rng(0).standard_normal((1, 1, 49, 10)))  # float64: cast on load
    proc = cli("run", out / "kws.pte", "--input", out / "x.npy", "--save-outputs", out / "outs")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "output 0: float32[1, 12]" in proc.stdout
    assert np.load(out / "outs" / "output_0.npy").shape == (1, 12)
    proc = cli("report", out / "kws.pte", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (method,) = json.loads(proc.stdout)["methods"]
    (delegate,) = method["delegates"]
    assert delegate["backend_id"] == "NeutronBackend" and delegate["kind"] == "host-reference"
    # shape mismatch: a one-line error and a hint, exit code 2
    np.save(out / "bad.npy", np.zeros((1, 1, 10, 49), np.float32))
    proc = cli("run", out / "kws.pte", "--input", out / "bad.npy")
    assert proc.returncode == 2
    err = error_lines(proc)
    assert err[0].startswith("error: input 0 is torch.float32[1, 1, 10, 49]") and err[1].startswith("hint:")


def test_profile(compiled):
    """compile --etrecord, run --etdump, profile: the ETDump/ETRecord pair ExecuTorch's Inspector reads."""
    out, _ = compiled
    assert (out / "kws.etrecord").is_file()
    np.save(out / "xp.npy", np.random.default_rng(1).standard_normal((1, 1, 49, 10)).astype(np.float32))
    proc = cli("run", out / "kws.pte", "--input", out / "xp.npy", "--etdump", out / "run.etdp")
    assert proc.returncode == 0 and (out / "run.etdp").stat().st_size > 0, proc.stderr[-3000:]
    proc = cli("profile", out / "kws.pte", "--input", out / "xp.npy", "--runs", "3", "--etrecord",
               out / "kws.etrecord", "--etdump", out / "prof.etdp")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    delegate = next(line for line in lines if line.startswith("Neutron delegate 0"))
    assert delegate.split()[3] == "3"  # runs column
    assert any("model ops: aten.convolution.default" in line for line in lines)
    assert (out / "prof.etdp").is_file()
    # no inputs and no --random-input: exit 2 with a hint; a missing ETRecord likewise
    proc = cli("profile", out / "kws.pte")
    assert proc.returncode == 2 and error_lines(proc)[1].startswith("hint:")
    proc = cli("profile", out / "kws.pte", "--random-input", "--etrecord", out / "missing.etrecord")
    assert proc.returncode == 2 and "no ETRecord" in error_lines(proc)[0]


def test_compare_tiny(tmp_path):
    (tmp_path / "tiny.py").write_text(TINY)
    calib = tmp_path / "calib"
    calib.mkdir()
    np.save(calib / "batch.npy", np.random.default_rng(1).standard_normal((4, 1, 3, 4, 5)).astype(np.float32))
    proc = cli("compare", f"{tmp_path / 'tiny.py'}:factory", "--calibration", calib, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["samples"] == 4 and data["worst_partition"] == "neutron_0"
    assert data["outputs"][0]["max_steps"] <= 2


BAD = {
    "missing_file": (["compile", "nope.py:factory", "-o", "x.pte"], "error: no such file: nope.py"),
    "bad_factory": (["compile", "examples/ds_cnn.py:nope", "-o", "x.pte"], "error: examples/ds_cnn.py has no function"),
    "unknown_target": (["compile", "examples/ds_cnn.py:factory", "--target", "imx8", "-o", "x.pte"],
                       "error: unknown target 'imx8'"),
    "no_calibration": (["compile", "examples/ds_cnn.py:factory", "-o", "x.pte"], "error: no calibration data"),
}


@pytest.mark.parametrize("case", BAD.values(), ids=BAD.keys())
def test_bad_input(case, tmp_path):
    args, message = case
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr[-3000:]
    err = error_lines(proc)
    assert len(err) == 2 and err[0].startswith(message) and err[1].startswith("hint: "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_targets_and_ops():
    proc = cli("targets", "--json")
    assert proc.returncode == 0 and set(json.loads(proc.stdout)) == {
        "imxrt700", "imxrt700cm", "mcxn94x", "imx95", "imx93", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256",
        "ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048"}
    proc = cli("ops", "--markdown")
    assert proc.returncode == 0 and "aten.convolution.default" in proc.stdout and proc.stdout.startswith("#")


def test_demo(tmp_path):
    """What `make demo` runs: the bundled CifarNet lowered, written, run on the host and compared."""
    proc = cli("demo", "--target", "imxrt700", "-o", tmp_path / "demo.pte")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "11 of 11 compute nodes (100.0%) on the Neutron NPU in 1 partition(s)" in proc.stdout
    assert "host-reference" in proc.stderr  # the one-line "no SDK" notice
    assert (tmp_path / "demo.pte").stat().st_size > 10_000
    assert "top-1 agreement" in proc.stdout and "worst partition: neutron_0" in proc.stdout


LEFTOVERS = '''
import torch
from torch import nn

class Sqrt(nn.Module):  # no Neutron kernel; a Cortex-M lookup table
    def forward(self, x):
        return torch.sqrt(x)

def factory():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 5, 10),
                          nn.ReLU(), Sqrt(), nn.Softmax(-1))
    return model.eval(), (torch.randn(1, 3, 4, 5),)
'''


def test_compile_and_run_for_imxrt700cm(tmp_path):
    """The whole chip: sqrt and (under NXP's documented table) a 10-class softmax become Cortex-M33 int8 kernels;
    the .pte runs on the host."""
    (tmp_path / "m.py").write_text(LEFTOVERS)
    proc = cli("compile", tmp_path / "m.py:factory", "--target", "imxrt700cm", "--constraints", "documented",
               "--random-calibration",
               "-o", tmp_path / "m.pte", "--report", tmp_path / "m.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 as int8 cortex-m33 kernels; 0 float on the CPU" in proc.stdout
    report = json.loads((tmp_path / "m.json").read_text())
    jsonschema.validate(report, load_schema())
    assert sorted(n["kernel"] for n in report["cortex_m"]["nodes"]) == ["cortex_m.quantized_activation",
                                                                        "cortex_m.softmax"]
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((1, 3, 4, 5)).astype("float32"))
    proc = cli("run", tmp_path / "m.pte", "--input", tmp_path / "x.npy")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "(1, 10)" in proc.stdout or "[1, 10]" in proc.stdout


def test_vela_configuration_options(tmp_path):
    """--system-config / --memory-mode / --config-ini reach Vela's flags (listed in the report) on an Ethos-U target
    and are refused, in one line naming the option, on a Neutron target."""
    common = ("--random-calibration", "-o", tmp_path / "m.pte", "--report", tmp_path / "m.json")
    proc = cli("compile", "examples/cifarnet.py:factory", "--target", "ethos-u85-256", "--memory-mode", "Shared_Sram",
               "--system-config", "Ethos_U85_SYS_Flash_High", *common, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    flags = json.loads((tmp_path / "m.json").read_text())["partitions"][0]["backend"]["vela_flags"]
    assert "--memory-mode=Shared_Sram" in flags and "--system-config=Ethos_U85_SYS_Flash_High" in flags, flags
    proc = cli("compile", "examples/cifarnet.py:factory", "--target", "imxrt700", "--memory-mode", "Shared_Sram",
               *common, cwd=ROOT)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 1 and len(errors) == 1 and "memory_mode" in errors[0], proc.stderr

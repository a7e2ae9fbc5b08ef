"""The command line on a board: `run --device PORT` against the TEST DOUBLE of NXP's modelrunner firmware
(modelrunner_double.py), and `compile --runner modelrunner` with its selective-build operator list. References:
the host runtime's outputs, ExecuTorch's own selective-build generator against our .pte inspector."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from executorch_neutron.board.client import INSTALL_HINT, BoardUnavailable, ModelRunner
from executorch_neutron.pte import inspect_pte
from executorch_neutron.runtime import run

ROOT = Path(__file__).resolve().parents[2]
FACTORY = '''
import torch
from torch import nn

def factory():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.Hardswish()).eval(), (torch.randn(1, 3, 9, 7),)
'''


def cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "executorch_neutron", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=600)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """`compile --runner modelrunner` of conv -> hardswish with hardswish kept on the CPU (it then needs
    dim_order_ops::_to_dim_order_copy.out, which NXP's firmware does not register)."""
    out = tmp_path_factory.mktemp("board_cli")
    (out / "model.py").write_text(FACTORY)
    proc = cli("compile", f"{out / 'model.py'}:factory", "--random-calibration", "-o", out / "m.pte",
               "--runner", "modelrunner", "--operators-not-to-delegate", "aten.hardswish.default")
    return out, proc


def test_compile_runner_check_names_each_missing_kernel(compiled):
    out, proc = compiled
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "runner check: dim_order_ops::_to_dim_order_copy.out (2 calls) is not in modelrunner's kernel table" \
        in proc.stdout
    assert "error: the .pte will not load on modelrunner: 1 problem(s) (listed above)" in proc.stderr
    assert (out / "m.pte").is_file()  # written all the same: it runs on the host, and the list below builds firmware


def test_compile_writes_the_selective_build_list(compiled):
    out, proc = compiled
    listed = yaml.safe_load((out / "m.ops.yaml").read_text())
    assert f"wrote {out / 'm.ops.yaml'}" in proc.stdout
    assert set(listed["operators"]) == set(inspect_pte(out / "m.pte").methods[0].cpu_kernels)
    assert set(listed["et_kernel_metadata"]) == set(listed["operators"])
    assert listed["include_all_operators"] is False


def test_run_on_the_device_double(compiled, modelrunner, tmp_path):
    """conv -> hardswish with everything delegated passes the check; --repeat 3 --compare-host --save-outputs."""
    out, _ = compiled
    (tmp_path / "model.py").write_text(FACTORY)
    proc = cli("compile", f"{tmp_path / 'model.py'}:factory", "--random-calibration", "-o", tmp_path / "m.pte",
               "--runner", "modelrunner")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "runner check: every CPU operator of the .pte is in modelrunner's kernel table" in proc.stdout
    assert "and the .pte fits its model buffer" in proc.stdout
    x = torch.randn(1, 3, 9, 7, generator=torch.Generator().manual_seed(5))
    np.save(tmp_path / "x.npy", x.numpy())
    port = modelrunner()
    proc = cli("run", tmp_path / "m.pte", "--device", port, "--input", tmp_path / "x.npy", "--repeat", "3",
               "--compare-host", "--save-outputs", tmp_path / "outs", "--timeout", "120")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the double printed its banner before the CLI opened the port (the session tests see it): no line about it
    assert f"board {port}" not in proc.stdout and "(no banner)" not in proc.stdout
    assert "on-board time over 3 runs: min" in proc.stdout
    assert "vs host: output 0: largest board-host difference 0 output step(s)" in proc.stdout
    assert "output 0: float32[1, 8, 7, 5] min" in proc.stdout
    saved = np.load(tmp_path / "outs" / "output_0.npy")
    assert saved.tobytes() == run(tmp_path / "m.pte", [x])[0].contiguous().numpy().tobytes()

    refused = cli("run", out / "m.pte", "--device", port, "--input", tmp_path / "x.npy")
    assert refused.returncode == 2
    assert "dim_order_ops::_to_dim_order_copy.out (2 calls) is not in modelrunner's kernel table" in refused.stderr


def test_board_only_flags_need_a_device(compiled):
    out, _ = compiled
    proc = cli("run", out / "m.pte", "--repeat", "3")
    assert proc.returncode == 2 and "error: --repeat applies to runs on a board" in proc.stderr


@pytest.mark.fast
def test_without_pyserial_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "serial", None)  # `import serial` raises ImportError
    with pytest.raises(BoardUnavailable, match="pip install 'executorch-neutron\\[board\\]'"):
        ModelRunner("/dev/ttyACM0")
    assert "executorch-neutron[board]" in INSTALL_HINT


@pytest.mark.fast
@pytest.mark.parametrize("command, flags, named", [
    ("run", ["--timeout", "3"], "--timeout applies"),
    ("run", ["--baud", "9600", "--runner", "mine.txt"], "--baud and --runner apply"),
    ("run", ["--timeout", "3", "--baud", "9600", "--runner", "x", "--repeat", "2", "--compare-host"],
     "--timeout, --baud, --runner, --repeat and --compare-host apply"),
    ("evaluate", ["--runner", "modelrunner"], "--runner applies"),
    ("evaluate", ["--timeout", "3", "--baud", "9600"], "--timeout and --baud apply"),
], ids=["run-timeout", "run-baud-runner", "run-all", "evaluate-runner", "evaluate-timeout-baud"])
def test_board_flags_without_a_device_are_refused(tmp_path, capsys, command, flags, named):
    """Before the change `run` accepted --timeout, --baud and --runner without --device and ignored them."""
    from executorch_neutron import cli as cli_module

    (tmp_path / "m.pte").write_bytes(b"never read")
    np.savez(tmp_path / "d.npz", x=np.zeros((1, 3), np.float32), y=np.zeros(1))
    args = ["run", str(tmp_path / "m.pte")] if command == "run" else [
        "evaluate", f"{tmp_path / 'm.py'}:factory", "--data", str(tmp_path / "d.npz")]
    code = cli_module.main(args + flags)
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [f"error: {named} to runs on a board, and no --device was given",
                                "hint: add --device PORT, or drop them to run on the host"]


@pytest.mark.fast
def test_the_board_guide_ships_with_the_package(capsys):
    """Hints point to `executorch-neutron guide board`, which prints the page from the installed package."""
    from executorch_neutron import cli as cli_module
    from executorch_neutron.board.cli_support import GUIDE

    assert cli_module.main(["guide", "board"]) == 0
    assert capsys.readouterr().out == (ROOT / "docs/guide/board.md").read_text()
    assert "executorch-neutron guide board" in GUIDE
    assert cli_module.main(["guide", "nope"]) == 2 and "hint: the pages: board" in capsys.readouterr().err
    sources = "".join(p.read_text() for p in (ROOT / "src/executorch_neutron").rglob("*.py"))
    assert "docs/guide/board.md" not in sources  # no hint points into the repository

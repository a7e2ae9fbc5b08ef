"""The CLI's first seconds: parsing and checking the arguments imports no torch (a wrong option, target, model or
.pte path is refused at once),
and a Ctrl-C while torch is being imported is a clean "interrupted" exit 130, not a traceback or an abort."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))

PARSE_ONLY = '''
import sys
from executorch_neutron import cli
from executorch_neutron.target import UnknownTargetError, get_target

parser = cli.build_parser()
for argv in (["--help"], ["compile", "--help"], ["compile", "--bogus"], ["demo", "--target", "nope"]):
    try:
        parser.parse_args(argv)
    except SystemExit:
        pass
for argv in (["demo", "--model", "cifarnett"], ["compile", "nope.py:factory", "-o", "x.pte"], ["compile", "m.py:f", "--target", "imx9", "-o", "x.pte"],
             ["run", "nope.pte"], ["report", "nope.pte"], ["profile", "nope.pte"], ["compare", "nope.py:f"],
             ["evaluate", "nope.py:f", "--data", "nope.npz"]):
    assert cli.main(argv) == 2, argv  # refused on its arguments
try:
    get_target("imxrt70")
except UnknownTargetError as exc:
    print(exc)
print("torch imported:", sorted(m for m in sys.modules if m == "torch" or m.startswith(("torch.", "executorch."))))
'''


def test_parsing_and_refusing_the_arguments_imports_no_torch():
    proc = subprocess.run([sys.executable, "-c", PARSE_ONLY], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("torch imported: []"), proc.stdout[-2000:]
    assert "did you mean 'imxrt700'?" in proc.stdout


MODEL = '''
import torch

def factory():
    return torch.nn.Conv2d(3, 4, 3).eval(), (torch.randn(1, 3, 8, 8),)
'''


@pytest.mark.parametrize("delay", [0.3, 1.5])
def test_ctrl_c_in_the_first_seconds_is_a_clean_exit(delay, tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    proc = subprocess.Popen([sys.executable, "-m", "executorch_neutron", "compile", "m.py:factory",
                             "--random-calibration", "-o", "m.pte"], cwd=tmp_path, env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    if proc.returncode == 0:  # finished before the signal came (an idle, fast machine): nothing to check
        pytest.skip(f"compile finished within {delay} s")
    assert proc.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == "error: interrupted", err[-3000:]
    assert "Traceback" not in err and "terminate called" not in err, err[-3000:]


@pytest.mark.fast
def test_the_bundled_model_names_read_without_torch_are_zoos():
    from executorch_neutron.models import zoo
    from executorch_neutron.cli import _bundled_models

    assert _bundled_models() == list(zoo.MODELS)

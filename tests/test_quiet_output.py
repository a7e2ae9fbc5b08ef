"""What a script of the user prints to a non-terminal stderr: our warnings as bare messages (no
"WARNING:executorch_neutron:" prefix, which ExecuTorch's own logging.debug() call would bring by configuring the root
logger), and no progress bars from the examples."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))


def test_an_example_prints_no_bars_and_no_logger_prefixes(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "ds_cnn.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, env=ENV, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "WARNING:" not in proc.stderr and "\r" not in proc.stderr and "it/s" not in proc.stderr, proc.stderr
    assert "delegation report" in proc.stdout


SCRIPT = '''
import logging
import torch
from executorch_neutron import lower

torch.manual_seed(0)
model, x = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3)).eval(), (torch.randn(1, 3, 8, 8),)
lower(model, x)  # no calibration inputs: lower() warns
logging.getLogger("executorch_neutron").warning("after lowering")
'''


def test_library_warnings_are_bare_messages():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert "after lowering" in lines and any("calibrat" in line for line in lines), proc.stderr
    assert not [line for line in lines if line.startswith(("WARNING:", "DEBUG:", "INFO:"))], proc.stderr

"""Runtime tests: make this folder's helpers (tflite_fixtures, pte_tools, ...) importable; shared .pte fixture."""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def stand_in_ptes(tmp_path_factory) -> Path:
    """.pte files from the stand-in backend (pte_factory.py), built in a subprocess so that its stand-in
    `NeutronBackend` class never meets the real one."""
    out = tmp_path_factory.mktemp("stand_in_ptes")
    proc = subprocess.run([sys.executable, str(HERE / "pte_factory.py"), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out

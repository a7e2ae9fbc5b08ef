"""Arm's own `EthosUBackend` (executorch.backends.arm.ethosu, loaded by ExecuTorch's Cortex-M quantizer) bears the
name of ours, and ExecuTorch finds a backend by name: an Ethos-U lowering after an imxrt700cm one, in one process,
must still be compiled by ours and give the same bytes. Run in a fresh interpreter so the import order is known."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import torch
    from torch import nn
    from executorch.exir.backend.backend_details import BackendDetails
    from executorch_neutron import lower

    def same_name():
        return [c for c in BackendDetails.__subclasses__() if c.__name__ == "EthosUBackend"]

    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 1)).eval()
    x = (torch.randn(1, 3, 10, 9),)
    calib = [x, (torch.randn(1, 3, 10, 9),)]
    before = lower(model, x, calib, target="ethos-u55-128").pte
    assert len(same_name()) == 1, same_name()
    lower(model, x, calib, target="imxrt700cm")  # loads ExecuTorch's Cortex-M quantizer, and with it Arm's class
    arm = [c for c in same_name() if not c.__module__.startswith("executorch_neutron")]
    assert arm, "Arm's EthosUBackend was not loaded: the test no longer tests the clash"
    after = lower(model, x, calib, target="ethos-u55-128").pte
    assert after == before, "the Ethos-U .pte changed after Arm's class of the same name was loaded"
    print("ok", len(same_name()))
""")


def test_ethos_u_lowering_after_arm_backend_class_is_loaded():
    env = {"PYTHONPATH": str(ROOT / "src")}
    import os

    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok 2", proc.stdout[-2000:] + proc.stderr[-4000:]

"""The HTML report is one self-contained file that a headless Chromium renders (screenshot is non-empty)."""

import subprocess

import torch
from torch import nn

from executorch_neutron import lower

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def test_html_report_renders(chromium, tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 16)).eval()
    x = torch.randn(1, 3, 6, 6)
    report = lower(model, (x,), [(x,)], operators_not_to_delegate=("aten.linear.default",)).report
    page = report.save(tmp_path / "report.html")
    shot = tmp_path / "report.png"
    cmd = [chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
           "--window-size=1200,900", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.is_file(), f"no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}"
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 5000

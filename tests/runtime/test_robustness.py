"""Hundreds of malformed payloads through the host runtime: clear errors, never a crash (run in a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

COUNT = 264  # 11 mutation kinds x 4 base programs x 6 rounds
MUST_FAIL = ("truncate", "random_bytes", "scramble_tflite", "huge_tflite_size", "zero_tflite_size",
             "microcode_magic", "header_counts")


def test_mutated_payloads_never_crash_the_runtime(stand_in_ptes):
    script = Path(__file__).with_name("fuzz_payloads.py")
    proc = subprocess.run([sys.executable, str(script), str(stand_in_ptes), str(COUNT), "1234"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"the runtime process died (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["total"] == COUNT >= 200
    assert report["unexpected"] == []
    ran = {k: v for k, v in report["outcomes"].items() if k.endswith(":ran")}
    assert not [k for k in ran if k.split(":")[0] in MUST_FAIL], report["outcomes"]
    assert sum(v for k, v in report["outcomes"].items() if k.endswith(":error")) >= 200

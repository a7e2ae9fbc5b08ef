"""A bounded run of benchmarks/fuzz.py: mutated .pte files through the API and the CLI, in worker processes.

Target (the issues'): 0 crashes, 0 hangs, 0 errors that are not clean, 0 silent differences inside host-reference
payloads (they carry a CRC-32). Differences elsewhere are legitimate: a changed weight or scale of a CPU kernel is
still a valid program.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz.py"


def test_mutated_pte_files_never_crash_hang_or_pass_a_changed_payload():
    proc = subprocess.run([sys.executable, str(FUZZ), "--n", "40", "--seed", "7", "--timeout", "120", "--json"],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout)
    for mode, counts in figures["counts"].items():
        assert sum(counts.values()) == 40, (mode, counts)
        bad = {k: counts[k] for k in ("crash", "hang", "unclear error", "different in payload") if counts[k]}
        assert not bad, (mode, bad, figures["examples"])
        assert counts["clean error"] >= 20, (mode, counts)  # most mutations must be caught, not run
    assert figures["unmutated channels_last run equals contiguous"], figures

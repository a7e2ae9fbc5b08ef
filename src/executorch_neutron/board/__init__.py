"""A real board: run a .pte on an i.MX RT700 running NXP's executorch_modelrunner firmware over its serial
protocol, and check before flashing whether a .pte will load there.

    from executorch_neutron.board import run_on_board
    run = run_on_board("model.pte", [x], "/dev/ttyACM0")      # BoardRun: .outputs (as the host run), .times_us

Modules: protocol.py (frames, CRC, payloads), client.py (ModelRunner: one command per method, pyserial; every link
fault its own error), port.py (one program per port: the lock and the holders of a device),
tensors.py (user tensors <-> the bytes the board takes and returns), session.py (run_on_board: checks, steps,
one-line errors), runners.py (kernel tables of firmwares, the check), qparams.py and compare.py (board vs host in
output steps), selective_build.py (the operator list a firmware build selects), virtual.py (a simulated
firmware on a pseudo-terminal: `executorch-neutron virtual-board`), cli_support.py (the CLI's part).
Names are imported on first use, so that `board.protocol` and `board.runners` load without torch.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "BoardBusy": ".client", "BoardDisconnected": ".client", "BoardError": ".client", "BoardProtocolError": ".client",
    "BoardRebooted": ".client", "BoardTimeout": ".client", "BoardUnavailable": ".client", "ModelRunner": ".client",
    "ResultMismatch": ".client",
    "Finding": ".runners", "MissingDelegate": ".runners", "Runner": ".runners", "RunnerError": ".runners",
    "check_kernels": ".runners",
    "check_pte": ".runners", "load_runner": ".runners",
    "BoardRun": ".session", "BoardRunError": ".session", "WillNotLoad": ".session", "run_on_board": ".session",
    "run_samples_on_board": ".session",
    "compare_with_host": ".compare",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'executorch_neutron.board' has no attribute {name!r}")

"""Link faults injected by the TEST DOUBLE of NXP's modelrunner firmware (modelrunner_double.py `--fault`, framing
code of its own): each becomes its own one-line error naming the step, log text and a slow link still give the host
runtime's outputs byte for byte, and on the command line none prints a traceback, a RESULT that disagrees with
GET_INFO saves nothing, and Ctrl-C exits 130 while the banner is drained, while the .pte is uploaded and while RUN
is waited for. References: the host runtime's outputs; the double's own framing."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from executorch_neutron import lower
from executorch_neutron.board import run_on_board
from executorch_neutron.board.client import (BoardDisconnected, BoardProtocolError, BoardRebooted, BoardTimeout,
                                             ModelRunner, ResultMismatch)
from executorch_neutron.board.runners import MODELRUNNER_BUFFERS
from executorch_neutron.board.tensors import to_board
from executorch_neutron.models.zoo import calibration
from executorch_neutron.runtime import run

ROOT = Path(__file__).resolve().parents[2]
X = torch.randn(1, 3, 7, 7, generator=torch.Generator().manual_seed(3))
WAIT = 120.0  # seconds per answer: the double loads programs with the host runtime on a shared, busy machine


@pytest.fixture(scope="module")
def pte(tmp_path_factory):
    """conv -> relu -> conv -> relu -> linear, 53 KB: larger than a pseudo-terminal's buffer (about 18 KB here), so
    that a double that stops reading leaves the client uploading."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3), torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3),
                                torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(64 * 3 * 3, 10)).eval()
    path = tmp_path_factory.mktemp("faults") / "m.pte"
    path.write_bytes(lower(model, (X,), calibration((X,), 8), target="imxrt700").pte)
    np.save(path.with_name("x.npy"), X.numpy())
    return path


@pytest.mark.parametrize("fault,error,message", [
    ("crc:RUN", BoardProtocolError, r"the answer to RUN was damaged \(a frame \(code 0x83\) failed its CRC check"),
    ("crc:GET_INFO", BoardProtocolError, r"the answer to GET_INFO was damaged"),
    ("huge:RUN", BoardProtocolError, r"the answer to RUN \(code 0x83\) announces 4,294,967,280 bytes, more than the "
                                     r"firmware can send \(266,240 bytes, its result buffer\)"),
    ("reboot:RUN", BoardRebooted, r"the board rebooted during RUN \(it printed its boot banner"),
    ("reboot:LOAD_INPUT", BoardRebooted, r"the board rebooted during LOAD_INPUT"),
    ("unplug:RUN", BoardDisconnected, r"went away during RUN: the board was unplugged or reset by the host"),
    ("wrong-shape", ResultMismatch, r"output 0 from the board is float32\[1, 5\] \(20 bytes\) but GET_INFO announced "
                                    r"float32\[1, 10\] \(40 bytes\)"),
    ("extra-output", ResultMismatch, r"RESULT carries 2 output\(s\) .* but GET_INFO announced 1 "),
    ("wrong-dtype", ResultMismatch, r"output 0 from the board is (u)?int8\[1, 10\]"),
])
def test_fault_is_its_own_line(modelrunner, pte, fault, error, message):
    with pytest.raises(error, match=message) as e:
        run_on_board(pte, [X], modelrunner("--fault", fault), timeout=WAIT)
    assert len(str(e.value).splitlines()) == 1


@pytest.mark.parametrize("fault,error,message", [
    ("truncate:LOAD_INPUT", BoardProtocolError, r"the answer to LOAD_INPUT stopped after 8 of 9 bytes \(nothing more "
                                                r"came for 5.0 s\)"),
    ("silent:RUN", BoardTimeout, r"no answer to RUN from .* within [\d.]+ s at 115200 baud"),
])
def test_fault_after_a_wait(modelrunner, pte, fault, error, message):
    """The double loads the program slowly: the short timeout starts at the faulty step."""
    step = fault.split(":")[1]
    with ModelRunner(modelrunner("--fault", fault), timeout=WAIT, buffers=MODELRUNNER_BUFFERS) as board:
        board.drain_banner()
        board.load_model(pte.read_bytes())
        inputs, _ = board.get_info()
        with pytest.raises(error, match=message):
            board.timeout = 5.0 if step == "LOAD_INPUT" else WAIT
            board.load_input(to_board(X, inputs[0], 0))
            board.timeout = 5.0
            board.run()


@pytest.mark.parametrize("fault", ["log", "slow"])
def test_log_text_and_a_slow_link_still_give_the_host_outputs(modelrunner, pte, fault):
    board = run_on_board(pte, [X], modelrunner("--fault", fault), timeout=WAIT)
    assert board.outputs[0].numpy().tobytes() == run(pte, [X])[0].numpy().tobytes()


def cli(*args) -> subprocess.Popen:
    env = dict(os.environ, PYTHONWARNINGS="ignore",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, "-m", "executorch_neutron", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def holds(pid: int, port: str) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == port for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.parametrize("fault,error", [
    ("unplug:RUN", "went away during RUN: the board was unplugged or reset by the host"),
    ("wrong-shape", "output 0 from the board is float32[1, 5] (20 bytes) but GET_INFO announced float32[1, 10] (40 "
                    "bytes)"),
])
def test_cli_fault_is_one_line_and_saves_nothing(modelrunner, pte, tmp_path, fault, error):
    proc = cli("run", pte, "--device", modelrunner("--fault", fault), "--input", pte.with_name("x.npy"),
               "--save-outputs", tmp_path / "outs", "--timeout", WAIT)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    assert error in line
    assert "Traceback" not in err and "--verbose shows the traceback" not in err and "returned no data" not in err
    assert not (tmp_path / "outs").exists()


@pytest.mark.parametrize("fault,when", [
    ("chatter", "the port is open"),  # a board that never stops printing: the banner is being drained
    ("stall:LOAD_MODEL", "stalled LOAD_MODEL"),  # the double stopped reading: the client is uploading
    ("silent:RUN", "got RUN"),
], ids=["draining the banner", "uploading", "waiting for RUN"])
def test_ctrl_c_exits_130(modelrunner, pte, fault, when):
    port = modelrunner("--fault", fault)
    proc = cli("run", pte, "--device", port, "--input", pte.with_name("x.npy"), "--timeout", WAIT)
    if when == "the port is open":
        deadline = time.monotonic() + 600
        while not holds(proc.pid, port) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
    else:
        modelrunner.expect(port, when)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted" and "Traceback" not in err

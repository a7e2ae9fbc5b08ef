"""`modelrunner`: start the TEST DOUBLE of NXP's modelrunner firmware (modelrunner_double.py) on a fresh
pseudo-terminal and give the port path; the double ends with the test. The test's process does not keep the port
open (the client refuses a port another process holds): the double waits for each program that opens it.
`modelrunner.expect(port, line)` waits until the double prints that line (`got RUN`, `stalled LOAD_MODEL`)."""

import os
import queue
import subprocess
import sys
import threading
import tty
from pathlib import Path

import pytest

DOUBLE = Path(__file__).with_name("modelrunner_double.py")
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def modelrunner():
    started = {}

    def start(*options: str) -> str:
        master, slave = os.openpty()
        tty.setraw(slave)  # a serial line: no echo, no newline translation (kept while the master is open)
        port = os.ttyname(slave)
        os.close(slave)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen([sys.executable, str(DOUBLE), str(master), *options], pass_fds=[master],
                                stdout=subprocess.PIPE, env=env, text=True)
        os.close(master)
        assert proc.stdout.readline().strip() == "ready", "the modelrunner double did not start"
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(got.strip()) for got in proc.stdout], daemon=True).start()
        started[port] = proc, lines
        return port

    def expect(port: str, line: str, seconds: float = 300.0) -> None:
        lines = started[port][1]
        while True:
            try:
                if lines.get(timeout=seconds) == line:
                    return
            except queue.Empty:
                raise AssertionError(f"the modelrunner double did not print {line!r} within {seconds} s") from None

    start.expect = expect
    yield start
    for proc, _ in started.values():
        proc.kill()
        proc.wait()

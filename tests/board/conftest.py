"""`modelrunner`: start the TEST DOUBLE of NXP's modelrunner firmware (modelrunner_double.py) on a fresh
pseudo-terminal and give the port path; the double and the terminal end with the test."""

import os
import subprocess
import sys
import tty
from pathlib import Path

import pytest

DOUBLE = Path(__file__).with_name("modelrunner_double.py")
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def modelrunner():
    started = []

    def start(*options: str) -> str:
        master, slave = os.openpty()
        tty.setraw(slave)  # a serial line: no echo, no newline translation
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen([sys.executable, str(DOUBLE), str(master), *options], pass_fds=[master],
                                stdout=subprocess.PIPE, env=env, text=True)
        os.close(master)
        started.append((proc, slave))
        assert proc.stdout.readline().strip() == "ready", "the modelrunner double did not start"
        return os.ttyname(slave)

    yield start
    for proc, slave in started:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        os.close(slave)

"""Shared test setup: make tests/harness.py importable from every test folder; quiet third-party noise; Ctrl-C
is a KeyboardInterrupt in every test."""

import logging
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
logging.getLogger("torchao").setLevel(logging.ERROR)


@pytest.fixture(autouse=True)
def _sigint_raises_keyboard_interrupt():
    """Python's own SIGINT handler for every test (and so for the child processes it starts): a library an earlier
    test of the same xdist worker loaded can leave SIGINT ignored at the OS level, which children inherit and
    Python then keeps; the Ctrl-C tests (test_atomic_writes, the catalogue's sigint cases) need the default."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield

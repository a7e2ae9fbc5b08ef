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


@pytest.fixture(autouse=True, scope="session")
def _every_lowered_model_renders_its_html_report():
    """A report must never fail on a model that lowered: every delegation report a test builds (every `lower()`)
    is also rendered as HTML, so a model any test lowers that breaks the HTML writer fails that test. Cheap: the
    graph layout of the largest test model takes milliseconds."""
    from executorch_neutron.report.delegation import DelegationReport

    build = DelegationReport.build.__func__

    def build_and_render(cls, *args, **kwargs):
        report = build(cls, *args, **kwargs)
        report.to_html()
        return report

    DelegationReport.build = classmethod(build_and_render)
    yield
    DelegationReport.build = classmethod(build)

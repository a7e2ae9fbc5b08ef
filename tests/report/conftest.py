"""Chromium for the HTML report test (installed by `make install` when missing and possible; else skipped)."""

import shutil

import pytest


@pytest.fixture(scope="session")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium is not installed (`make install` installs Debian's chromium when run as root)")
    return path

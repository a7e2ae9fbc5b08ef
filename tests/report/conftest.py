"""Chromium for the HTML report test: Debian's `chromium`, installed with apt-get when missing (root only)."""

import os
import shutil
import subprocess

import pytest


def _find() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> str:
    path = _find()
    if path is None and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = ["apt-get", "install", "-y", "-q", "chromium"]
        if subprocess.run(install, env=env, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
            subprocess.run(install, env=env, capture_output=True)
        path = _find()
    if path is None:
        pytest.skip("chromium is not installed and cannot be installed here (needs root and apt-get)")
    return path

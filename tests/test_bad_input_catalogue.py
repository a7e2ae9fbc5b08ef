"""Every case of the bad-input catalogue (tests/bad_input_catalogue.py): the exit code and the message, and no crash.

Python snippets and crash-prone or environment-changing CLI cases run in a child process (a signal would show as
a negative return code); the other CLI cases call `cli.main` in this process. The table of
docs/guide/troubleshooting.md must equal the catalogue's rendering.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bad_input_catalogue import CASES, PAGE, catalogue_files, markdown, page_table

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("catalogue")
    catalogue_files(d)
    return d


def _child(case, d: Path) -> tuple[int, str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    env.update({k: v.format(d=d) for k, v in case.env.items()})
    cmd = ([sys.executable, "-c", case.script.format(d=d)] if case.script
           else [sys.executable, "-m", "executorch_neutron", *(a.format(d=d) for a in case.argv)])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=d)
    return proc.returncode, proc.stdout + proc.stderr


def _in_process(case, d: Path) -> tuple[int, str]:
    import logging

    from executorch_neutron import cli

    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    logging.getLogger().addHandler(handler)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([a.format(d=d) for a in case.argv])
    finally:
        logging.getLogger().removeHandler(handler)
    return code, out.getvalue() + err.getvalue()


def _state(path: Path):
    return (os.readlink(path) if path.is_symlink() else None), path.read_bytes()


@pytest.mark.parametrize("name", CASES, ids=CASES.keys())
def test_catalogue_case(name, files):
    case = CASES[name]
    before = {f: _state(files / f) for f in case.intact}
    try:
        code, output = (_child if case.script or case.child else _in_process)(case, files)
        changed = [f for f, state in before.items() if _state(files / f) != state]
        temporary = sorted(str(p.relative_to(files)) for p in files.rglob(".*.tmp"))
    finally:  # the next cases need the files as they were (and none of this case's temporary files)
        for f, (link, data) in before.items():
            if link is None and (files / f).read_bytes() != data:
                (files / f).write_bytes(data)
        for leftover in files.rglob(".*.tmp"):
            leftover.unlink()
    assert not changed, f"{changed} changed:\n{output[-3000:]}"
    assert not temporary, f"temporary files left: {temporary}"
    assert code == case.code, f"exit code {code} (expected {case.code}):\n{output[-3000:]}"
    assert case.fragment.format(d=files) in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) <= 1 and "Traceback" not in output or case.script, output[-3000:]


@pytest.mark.fast
def test_troubleshooting_page_is_the_catalogue():
    assert page_table() == markdown(), (
        f"{PAGE.relative_to(ROOT)}'s table is stale: run python tests/bad_input_catalogue.py --write-docs")

"""The README's tutorial and the user guide's commands, run verbatim: a page's `# NAME.py` python blocks are written
to NAME.py and every line of its bash blocks runs in a fresh directory, in order, with this environment's
`executorch-neutron` and `python` first on PATH; each must exit 0. A step that uses a file no earlier step creates
fails here before it fails a newcomer.

The directory stands for the root of a fresh clone (its `examples` folder is there). A guide page runs where the
tutorial's files are (mynet.py, calib/, x.npy: the tutorial's own steps make them, its compiles aside); a command a
PC without a board cannot run is skipped, with the reason in `SKIPPED`; a command ending in `&` runs in the
background until the page's last command is done (the virtual board)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide"
INSTALL = ("python3.11 -m venv", "pip install", "make ")  # the install steps: this environment is installed
#: commands of the guide a PC without a board cannot run (pattern -> why)
SKIPPED = {
    r"--device /dev/tty": "needs a board with NXP's modelrunner firmware on a serial port (board.md's virtual-board "
                          "session runs the same `run --device` without one)",
    r"^executorch-neutron run damaged\.pte": "needs a damaged .pte; tests/bad_input_catalogue.py makes this one "
                                             "(bad_qmax) and checks these lines",
}


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block of a Markdown text, dedented (the README's sit in a list)."""
    return [(lang, textwrap.dedent(body)) for lang, body in re.findall(r"```(\w+)\n(.*?)```", text, flags=re.S)]


def files(blocks) -> dict[str, str]:
    """The python blocks that name their file on their first line (`# mynet.py`)."""
    return {m.group(1): body for lang, body in blocks if lang == "python" and (m := re.match(r"# (\S+\.py)\n", body))}


def commands(blocks) -> list[str]:
    return [line.strip() for lang, body in blocks if lang == "bash" for line in body.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def skipped(command: str) -> str | None:
    """Why a command is not run here, or None."""
    if command.startswith(INSTALL):
        return "an install step: this environment is installed"
    return next((why for pattern, why in SKIPPED.items() if re.search(pattern, command)), None)


def _env() -> dict:
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def run_verbatim(blocks, cwd: Path) -> list[str]:
    """Write the blocks' files into `cwd` and run their commands there, in order (see the module docstring);
    returns the commands run."""
    for name, body in files(blocks).items():
        (cwd / name).write_text(body)
    env, background, ran = _env(), [], []
    try:
        for command in commands(blocks):
            if skipped(command):
                continue
            ran.append(command)
            if command.endswith("&"):
                background.append(_start(command[:-1].strip(), cwd, env))
                continue
            done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    finally:
        for process in background:
            _stop(process)
    return ran


def _start(command: str, cwd: Path, env: dict) -> subprocess.Popen:
    """A background command (its own process group); a `--link PATH` it makes is waited for (the virtual board's
    port), so that the next command finds it."""
    process = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    link = re.search(r"--link (\S+)", command)
    deadline = time.monotonic() + 120
    while link and not (cwd / link.group(1)).exists():
        assert process.poll() is None, f"{command} ended: {process.stdout.read()[-2000:]}"
        assert time.monotonic() < deadline, f"{command}: no {link.group(1)} after 120 s"
        time.sleep(0.2)
    return process


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C, as the guide stops it
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _tutorial_blocks() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    return code_blocks(text.split("## Tutorial", 1)[1].split("\n## ", 1)[0])


def test_the_readme_tutorial_runs_verbatim(tmp_path):
    blocks = _tutorial_blocks()
    assert "mynet.py" in files(blocks), "the tutorial's factory block starts with '# mynet.py'"
    ran = run_verbatim(blocks, tmp_path)
    assert any(c.startswith("executorch-neutron evaluate") for c in ran), ran


def _guide_pages() -> list[Path]:
    return [p for p in sorted(GUIDE.glob("*.md")) if commands(code_blocks(p.read_text()))]


@pytest.fixture
def clone_with_the_tutorial(tmp_path) -> Path:
    """A fresh directory with the clone's examples and the tutorial's files, made by its own steps (its factory
    block, its `mkdir` / `python -c` lines; not its compiles)."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    blocks = _tutorial_blocks()
    setup = [(lang, "\n".join(line for line in body.splitlines() if not line.startswith("executorch-neutron")))
             if lang == "bash" else (lang, body) for lang, body in blocks]
    run_verbatim(setup, tmp_path)
    return tmp_path


@pytest.mark.parametrize("page", _guide_pages(), ids=lambda p: p.stem)
def test_the_guides_commands_run_verbatim(page, clone_with_the_tutorial):
    blocks = code_blocks(page.read_text())
    ran = run_verbatim(blocks, clone_with_the_tutorial)
    assert ran or all(skipped(c) for c in commands(blocks)), page.name


def test_every_guide_command_runs_or_says_why_not():
    """A bash block of the guide holds commands, not a synopsis (`[--flag]`, `...`: a `text` block), and a command
    is run above unless `SKIPPED` (or the install steps) says why not; every reason names something still there."""
    pages = {p.name: commands(code_blocks(p.read_text())) for p in sorted(GUIDE.glob("*.md"))}
    for name, found in pages.items():
        for command in found:
            assert not re.search(r"\.\.\.|\[--", command), f"{name}: not a command but a synopsis: {command}"
    every = [c for found in pages.values() for c in found]
    for pattern in SKIPPED:
        assert any(re.search(pattern, c) for c in every), f"SKIPPED names no command of the guide: {pattern}"

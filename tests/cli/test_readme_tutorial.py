"""The README's tutorial, run verbatim: its `# mynet.py` block is written to mynet.py and every line of its bash
blocks runs in a fresh directory, in order, with this environment's `executorch-neutron` and `python` first on PATH;
each must exit 0. A step that uses a file no earlier step creates fails here before it fails a newcomer."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tutorial_blocks() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Tutorial", 1)[1].split("\n## ", 1)[0]
    return [(lang, textwrap.dedent(body)) for lang, body in re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)]


def test_the_readme_tutorial_runs_verbatim(tmp_path):
    blocks = _tutorial_blocks()
    files = [body for lang, body in blocks if lang == "python" and body.startswith("# mynet.py")]
    assert len(files) == 1, "the tutorial's factory block starts with '# mynet.py'"
    (tmp_path / "mynet.py").write_text(files[0])
    commands = [line.strip() for lang, body in blocks if lang == "bash" for line in body.splitlines()
                if line.strip() and not line.strip().startswith("#")]
    assert any(c.startswith("executorch-neutron evaluate") for c in commands), commands
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for command in commands:
        if command.startswith(("python3.11 -m venv", "pip install", "make ")):
            continue  # the install steps: this environment is installed
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"

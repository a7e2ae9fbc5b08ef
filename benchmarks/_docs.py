"""Write a docs/<topic>.md page from a benchmark script: its first lines name the script and the commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def write_page(topic: str, script: str, title: str, lines: list[str]) -> Path:
    path = ROOT / "docs" / f"{topic}.md"
    path.parent.mkdir(exist_ok=True)
    head = [f"# {title}", "", f"Written by `{script}` at commit `{commit()}`; rerun it to refresh.", ""]
    path.write_text("\n".join(head + lines) + "\n", encoding="utf-8")
    return path

"""The docs pages the benchmark scripts write: docs/<topic>.md, one page per script (shared by the scripts).

A page opens with its title and a line naming the script that writes it and the commit (`git rev-parse --short
HEAD`) of its last write. Each table a script measured sits in a block that names the command that printed it
and the commit it was measured at:

    <!-- figures: python benchmarks/model_zoo.py --samples 4 -->
    Measured at commit `9978d84` with `python benchmarks/model_zoo.py --samples 4` (load average 2.1 on 2 cores):

    | family | ... |
    <!-- figures end -->

`write_figures` replaces the block of the same command (or appends one) and keeps everything else on the page:
the text around the blocks is written by hand. Scripts call it when given `--write-docs`.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"<!-- figures: (?P<command>.*?) -->\n.*?<!-- figures end -->\n", re.S)


def commit(root: Path = ROOT) -> str:
    """"commit `<HEAD's short hash>`", marked when the sources differ from it (figures from a modified tree)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    if head.returncode != 0:
        raise SystemExit(f"--write-docs needs a git checkout (git rev-parse failed: {head.stderr.strip()})")
    dirty = subprocess.run(["git", "status", "--porcelain", "src", "benchmarks", "tests"], cwd=root,
                           capture_output=True, text=True).stdout.strip()
    return f"commit `{head.stdout.strip()}`" + (" (with uncommitted changes)" if dirty else "")


def add_argument(parser) -> None:
    parser.add_argument("--write-docs", action="store_true",
                        help="also write the figures into this script's page under docs/ (keeps the hand-written text)")


def command(script: str, argv: list[str] | None = None) -> str:
    """The command line that printed the figures, without --write-docs, as a reader runs it from a clone: a path in
    the checkout relative to it (tests/test_docs.py refuses pages naming this machine's other directories)."""
    args = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--write-docs"]
    return " ".join(["python", script, *(_relative(a) for a in args)])


def _relative(arg: str) -> str:
    path = Path(arg)
    if path.is_absolute() and path.resolve().is_relative_to(ROOT):
        return str(path.resolve().relative_to(ROOT)) or "."
    return arg


class _Tee(io.TextIOBase):
    def __init__(self, out):
        self.out, self.kept = out, io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


@contextlib.contextmanager
def capture():
    """Print as usual and keep what was printed: `with capture() as printed: ...; as_markdown(printed.getvalue())`."""
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield tee.kept


@contextlib.contextmanager
def figures(args, script: str, topic: str, title: str):
    """Print as usual inside the block; with `--write-docs` (`args.write_docs`), put what was printed on
    docs/<topic>.md when the block ends: `with _docs.figures(args, "benchmarks/x.py", "x", "Title"): measure()`."""
    with capture() as printed:
        yield
    if args.write_docs:
        write_figures(script, topic, title, as_markdown(printed.getvalue()))


def as_markdown(printed: str) -> str:
    """Markdown table lines (and HTML comments) as they are, every other run of lines in a text block; blank lines
    between tables stay blank lines."""
    out, text = [], []

    def flush():
        while text and not text[-1].strip():
            text.pop()
        if text:
            out.extend([""] * bool(out and out[-1]) + ["```text", *text, "```"])
        text.clear()

    for line in printed.rstrip("\n").splitlines():
        if line.startswith(("|", "<!--")):
            flush()
            if out and out[-1] and not out[-1].startswith(("|", "<!--")):
                out.append("")  # a table after a text block needs its blank line
            out.append(line)
        elif not line.strip() and not text:
            out.append("")
        else:
            text.append(line)
    flush()
    return "\n".join(out) + "\n"


def machine() -> str:
    """The load the figures were measured under (timings scale with it)."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def block(cmd: str, table: str, at: str, where: str = "") -> str:
    where = f" ({where})" if where else ""
    return (f"<!-- figures: {cmd} -->\nMeasured at {at} with `{cmd}`{where}:\n\n{table.rstrip()}\n"
            f"<!-- figures end -->\n")


def header(script: str, at: str) -> str:
    return (f"Written by [`{script}`](../{script}) (`python {script} --write-docs`), last at {at}; each table "
            f"names the command and the commit it was measured with. The text between the tables is written by hand.")


def write_figures(script: str, topic: str, title: str, table: str, cmd: str | None = None,
                  docs: Path = DOCS, at: str | None = None) -> Path:
    """Put `table` (Markdown lines printed by `script`) on docs/<topic>.md in the block of its command."""
    where = "" if at else machine()  # a measurement made now: say under which load
    at = at or commit()
    cmd = cmd or command(script)
    page = docs / f"{topic}.md"
    new = block(cmd, table, at, where)
    if page.exists():
        text = page.read_text()
        lines = text.split("\n", 3)  # title, blank, header line, rest
        rest = lines[3] if len(lines) > 3 else ""
        text = f"{lines[0]}\n\n{header(script, at)}\n{rest}"
        match = next((m for m in BLOCK.finditer(text) if m.group("command") == cmd), None)
        text = text[:match.start()] + new + text[match.end():] if match else text.rstrip("\n") + "\n\n" + new
    else:
        text = f"# {title}\n\n{header(script, at)}\n\n{new}"
    docs.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    print(f"wrote {page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}", file=sys.stderr)
    return page

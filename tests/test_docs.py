"""The documentation stays a guide with traceable figures: the README is short and its links resolve; every figures
page under docs/ names the benchmark script that writes it and commits that exist; the scripts' page writer keeps
the hand-written text and replaces only the block of the command it ran."""

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# benchmarks/_docs.py, loaded from its file: benchmarks/ on sys.path would shadow test packages (ethos_u)
_spec = importlib.util.spec_from_file_location("_docs", ROOT / "benchmarks" / "_docs.py")
_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_docs)

pytestmark = pytest.mark.fast

README_MAX_LINES = 250
FIGURE_PAGES = sorted((ROOT / "docs").glob("*.md"))
GUIDE_PAGES = sorted((ROOT / "docs" / "guide").glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
COMMIT = re.compile(r"commit `([0-9a-f]{7,40})`")


def _in_git_checkout() -> bool:
    return shutil.which("git") is not None and subprocess.run(
        ["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True).returncode == 0


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, flags=re.M)}


def _broken_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target} (no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest})")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {dest.name})")
    return broken


def test_readme_is_short():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= README_MAX_LINES, (
        f"README.md has {n} lines (at most {README_MAX_LINES}): move reference text to docs/guide/ and figures to "
        f"the docs/ page of the benchmark script that prints them")


@pytest.mark.parametrize("page", ["README.md", "HISTORY.md", *(str(p.relative_to(ROOT)) for p in
                                                                FIGURE_PAGES + GUIDE_PAGES)])
def test_links_resolve(page):
    broken = _broken_links(ROOT / page)
    assert not broken, f"{page}: links that lead nowhere: {broken}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in LINK.findall((ROOT / "README.md").read_text())}
    missing = [str(p.relative_to(ROOT)) for p in FIGURE_PAGES + GUIDE_PAGES if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


@pytest.mark.parametrize("page", FIGURE_PAGES, ids=[p.name for p in FIGURE_PAGES])
def test_figures_page_names_its_script_and_commit(page):
    head = "\n".join(page.read_text().splitlines()[:5])
    scripts = re.findall(r"benchmarks/\w+\.py", head)
    assert scripts, f"{page.name}: its first lines name no benchmarks/ script (write it with the script's --write-docs)"
    for script in scripts:
        assert (ROOT / script).is_file(), f"{page.name} names {script}, which does not exist"
        source = (ROOT / script).read_text()
        writes = "write_figures(" in source or "_docs.figures(" in source
        assert writes and f'"{page.stem}"' in source, (
            f"{script} does not write {page.name} (_docs.figures(args, script, \"{page.stem}\", title) or "
            f"_docs.write_figures(..., \"{page.stem}\", ...) on --write-docs)")
    assert COMMIT.search(head), f"{page.name}: its first lines name no commit (`git rev-parse --short HEAD`)"


@pytest.mark.parametrize("page", FIGURE_PAGES, ids=[p.name for p in FIGURE_PAGES])
def test_figures_page_commits_exist(page):
    if not _in_git_checkout():
        pytest.skip("not a git checkout: the commits cannot be looked up")
    commits = set(COMMIT.findall(page.read_text()))
    missing = [c for c in sorted(commits) if subprocess.run(["git", "cat-file", "-e", f"{c}^{{commit}}"], cwd=ROOT,
                                                            capture_output=True).returncode != 0]
    assert not missing, f"{page.name} names commits that are not in this repository: {missing}"


def test_figures_blocks_name_command_and_commit():
    for page in FIGURE_PAGES:
        text = page.read_text()
        blocks = list(_docs.BLOCK.finditer(text))
        assert blocks, f"{page.name} holds no figures block (<!-- figures: COMMAND --> ... <!-- figures end -->)"
        for b in blocks:
            assert COMMIT.search(b.group(0)), f"{page.name}: the block of `{b.group('command')}` names no commit"
        assert text.count("<!-- figures:") == len(blocks), f"{page.name}: a figures block is not closed"


def test_write_figures_keeps_the_text_and_replaces_its_block(tmp_path):
    at1, at2 = "commit `1111111`", "commit `2222222`"
    page = _docs.write_figures("benchmarks/x.py", "topic", "A title", "| a |\n|---|\n| 1 |\n",
                               cmd="python benchmarks/x.py", docs=tmp_path, at=at1)
    page.write_text(page.read_text() + "\nHand-written reading of the table.\n")
    _docs.write_figures("benchmarks/x.py", "topic", "A title", "| a |\n|---|\n| 2 |\n",
                        cmd="python benchmarks/x.py", docs=tmp_path, at=at2)
    _docs.write_figures("benchmarks/x.py", "topic", "A title", "| b |\n|---|\n| 3 |\n",
                        cmd="python benchmarks/x.py --other", docs=tmp_path, at=at2)
    text = page.read_text()
    lines = text.splitlines()
    assert lines[0] == "# A title" and "benchmarks/x.py" in lines[2] and at2 in lines[2]
    assert "| 1 |" not in text and "| 2 |" in text and "| 3 |" in text
    assert "Hand-written reading of the table." in text
    blocks = [b.group("command") for b in _docs.BLOCK.finditer(text)]
    assert blocks == ["python benchmarks/x.py", "python benchmarks/x.py --other"]


def test_as_markdown_keeps_tables_and_fences_text():
    md = _docs.as_markdown("timm 1.0\n| a |\n|---|\n| 1 |\ncounts: 3\n\n| b |\n")
    # a blank line between a table and a text block; printed blank lines stay blank lines, not empty text blocks
    assert md == "```text\ntimm 1.0\n```\n\n| a |\n|---|\n| 1 |\n\n```text\ncounts: 3\n```\n\n| b |\n"


MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|tmp|root|home|Users)/[^\s`'\")]*")


@pytest.mark.parametrize("page", [ROOT / "README.md", *FIGURE_PAGES, *GUIDE_PAGES],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_absolute_path_of_this_machine(page):
    """A page's commands run from a clone: no directory of the machine a page was written on (/work/..., /tmp/...,
    a home directory)."""
    found = MACHINE_PATH.findall(page.read_text())
    assert not found, f"{page.relative_to(ROOT)} names {found}: use a path relative to the checkout"


def test_benchmark_commands_name_checkout_paths_relatively():
    assert _docs.command("benchmarks/x.py", ["--out", str(ROOT / "out" / "x"), "--write-docs", "--n", "3"]) == \
        "python benchmarks/x.py --out out/x --n 3"

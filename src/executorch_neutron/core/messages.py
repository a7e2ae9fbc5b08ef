"""One-line messages from multi-line errors: a rejection reason or an error we show is one line a user can read.

ExecuTorch's and torch.fx's errors append "While executing %node ...", "Original traceback:" and source lines to
the message; `first_line` keeps the first meaningful line (the full text belongs in the debug log, `--verbose`).
"""

from __future__ import annotations

#: lines that frame an error rather than say what went wrong
_FRAMING = ("While executing", "Original traceback", "Traceback (most recent call last)", "File \"",
            "Exception raised from", "Set TORCH_LOGS", "For more information")


def elide(text: str, limit: int) -> str:
    """`text` whole up to `limit` characters; a longer one keeps its start and its end (where a what-to-do part
    stands) and leaves out the middle between words, saying how many characters it left out."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    head = text[:half].rsplit(" ", 1)[0]
    tail = text[-half:].split(" ", 1)[-1]
    return f"{head} ... [{len(text) - len(head) - len(tail)} characters left out] ... {tail}"


def first_line(error: BaseException | str, limit: int = 600) -> str:
    """The first non-blank line of `error`'s message that is not framing, elided to about `limit` characters (an
    exception's type name when there is none)."""
    for line in str(error).splitlines():
        line = line.strip()
        if line and not line.startswith(_FRAMING):
            return elide(line, limit)
    return type(error).__name__ if isinstance(error, BaseException) else ""


def guide_pages() -> dict:
    """The user guide's pages shipped in the package (`executorch_neutron/guide`, the repository's docs/guide):
    name -> path, sorted by name."""
    from importlib.resources import files

    root = files("executorch_neutron") / "guide"
    return {p.name[:-3]: p for p in sorted(root.iterdir(), key=lambda p: p.name) if p.name.endswith(".md")}


def see_guide(page: str, section: str = "") -> str:
    """A hint that names documentation a user of the installed wheel can open: `executorch-neutron guide PAGE`."""
    return f"`executorch-neutron guide {page}`" + (f" ({section})" if section else "")

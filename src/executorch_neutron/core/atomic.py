"""Atomic file writes: a temporary file in the target's directory, flushed to disk, then renamed into place; and
the check that a command's outputs are neither its inputs nor each other.

An interruption (Ctrl-C, a full disk, a crash) leaves either the old file or the new one, never a truncated one;
the temporary file is removed on failure. A Ctrl-C that arrives while the finished temporary file is being
committed is held until the rename is decided: before the rename the old file is kept, after it the new one is
complete. An output path that is a symlink is written through to its target (as `cp` does), not replaced by a
regular file. Every artifact the package writes (.pte, reports, ETRecords, the cached host library,
intermediates, saved outputs) goes through here.

    write_bytes(path, data)
    with replacing(path) as tmp:        # for writers that want a path (ETRecord.save, numpy.save, a compiler)
        something.save(tmp)
    check_distinct([("the model", "m.py")], [("-o", "m.pte"), ("--report", "r.html")])  # PathCollision
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterable, Iterator

_PREFIX_CHARS = 64  # of the target's name in the temporary file's name: a legal long name stays legal


class PathCollision(ValueError):
    """An output path resolves to an input or to another output of the same command."""


@contextlib.contextmanager
def sigint_held() -> Iterator[Callable[[], bool]]:
    """Hold Ctrl-C (SIGINT) for the block; yields `interrupted()`. The held signal is delivered at the end."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread gets KeyboardInterrupt
        yield lambda: False
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield lambda: bool(caught)
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and previous is signal.default_int_handler:
            raise KeyboardInterrupt
        if caught:
            signal.raise_signal(signal.SIGINT)  # whatever the program installed handles it now


def _write_target(path: Path) -> Path:
    """The file a write to `path` lands in: a symlink's final target (written through), else `path`."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextlib.contextmanager
def replacing(path: str | Path, mkdir: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to `path` (its symlink target when it is a symlink); on success it replaces
    that file atomically, on failure or Ctrl-C before the rename it is removed and the old file kept."""
    target = _write_target(Path(path))
    if mkdir:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)  # an existing file keeps its permissions
    except OSError:
        mode = 0o644
    with sigint_held() as interrupted:  # a Ctrl-C between creating the temporary file and owning it would orphan it
        fd, name = tempfile.mkstemp(prefix=f".{target.name[:_PREFIX_CHARS]}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        if interrupted():
            os.unlink(name)
    tmp = Path(name)
    try:
        yield tmp
        with sigint_held() as interrupted:
            with open(tmp, "rb+") as f:  # the bytes reach the disk before the rename makes them visible
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            if not interrupted():  # Ctrl-C so far: keep the old file (the held signal is raised on exit)
                os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically (creating its directory); returns the path."""
    path = Path(path)
    with replacing(path) as tmp:
        tmp.write_bytes(data)
    return path


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def _identity(path: Path):
    """What a path resolves to: the file's (device, inode) when it exists (hard links agree), else its real path
    (symlinks and `..` resolved)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return ("path", real)
    return (st.st_dev, st.st_ino)


def check_distinct(inputs: Iterable[tuple[str, str | Path]], outputs: Iterable[tuple[str, str | Path]]) -> None:
    """Raise PathCollision when an output (label, path) resolves to an input or to an earlier output, naming both.
    Call it before any work starts: a command must never write over what it reads or what it wrote."""
    seen: dict = {}
    for label, path in inputs:
        if path is not None:
            seen.setdefault(_identity(Path(path)), (label, path))
    for label, path in outputs:
        if path is None:
            continue
        key = _identity(Path(path))
        if key in seen:
            other_label, other = seen[key]
            raise PathCollision(f"{label} {path} is the same file as {other_label} {other}: writing it would "
                                f"destroy that file")
        seen[key] = (label, path)

"""Atomic file writes: a temporary file in the target's directory, flushed to disk, then renamed into place.

An interruption (Ctrl-C, a full disk, a crash) leaves either the old file or the new one, never a truncated one;
the temporary file is removed on failure. Every artifact the package writes (.pte, reports, ETRecords, the cached
host library, intermediates, saved outputs) goes through here.

    write_bytes(path, data)
    with replacing(path) as tmp:        # for writers that want a path (ETRecord.save, numpy.save, a compiler)
        something.save(tmp)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def replacing(path: str | Path, mkdir: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success it replaces `path` atomically, on failure it is removed."""
    path = Path(path)
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:  # the bytes reach the disk before the rename makes them visible
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
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

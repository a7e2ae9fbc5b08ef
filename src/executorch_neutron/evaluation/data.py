"""A labelled data set for `evaluate`: read from disk (numpy only, no torch) and checked.

Two forms:
- an `.npz` file with two arrays, `x` (samples, first axis = sample) and `y` (labels or targets, one per sample);
- a directory of `.npy` files, one sample each (sorted by name), with its labels in `labels.txt` (one line per
  sample: `FILE LABEL [LABEL ...]`, `#` comments) or `labels.npy` (one row per sample, in the files' sorted order).

Every failure is a one-line `UserError` naming what was wrong and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..models.loading import UserError

FORMAT_HINT = ("pass an .npz with arrays 'x' (one sample per row) and 'y' (one label or target per sample), or a "
               "directory of .npy samples with labels.txt ('FILE LABEL' per line) or labels.npy")
LABEL_FILES = ("labels.txt", "labels.npy")


@dataclass
class Dataset:
    x: np.ndarray  # (N, *sample shape)
    y: np.ndarray  # (N, *label shape)
    source: str

    def __len__(self) -> int:
        return len(self.x)


def check_path(path: str | Path) -> Path:
    """The data set's path, refused before any work (and before torch loads) when it is neither form."""
    path = Path(path)
    if path.is_dir():
        if not any((path / name).is_file() for name in LABEL_FILES):
            raise UserError(f"{path} has no labels.txt or labels.npy", FORMAT_HINT)
        return path
    if not path.exists():
        raise UserError(f"no such file or directory: {path}", FORMAT_HINT)
    if path.suffix.lower() != ".npz":
        raise UserError(f"{path}: a data set is an .npz file or a directory, not {path.suffix or 'a file without suffix'}",
                        FORMAT_HINT)
    return path


def load_dataset(path: str | Path, limit: int | None = None) -> Dataset:
    """The data set at `path` (its first `limit` samples when given), checked: x and y of one length, no NaN/Inf."""
    path = check_path(path)
    x, y = _read_directory(path) if path.is_dir() else _read_npz(path)
    if len(x) != len(y):
        raise UserError(f"{path}: x holds {len(x)} samples but y holds {len(y)} labels",
                        "give one label (or target) per sample")
    if not len(x):
        raise UserError(f"{path} holds no samples", "save at least one sample")
    if limit is not None:
        x, y = x[:limit], y[:limit]
    for name, a in (("x", x), ("y", y)):
        _check_finite(a, f"{path}: {name}")
    return Dataset(x, y, str(path))


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with np.load(path) as z:
            missing = [k for k in ("x", "y") if k not in z.files]
            if missing:
                raise UserError(f"{path} has no array {' or '.join(repr(k) for k in missing)} (it holds "
                                f"{', '.join(repr(k) for k in z.files) or 'nothing'})",
                                "np.savez(FILE, x=samples, y=labels)")
            return z["x"], z["y"]
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - zip/numpy errors come in many types
        raise UserError(f"cannot read {path} ({type(exc).__name__}: {exc})", "write it again with numpy.savez") from None


def _load_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot read {path} ({type(exc).__name__}: {exc})", "write it again with numpy.save") from None


def _read_directory(path: Path) -> tuple[np.ndarray, np.ndarray]:
    files = sorted(p for p in path.iterdir() if p.suffix.lower() == ".npy" and p.name not in LABEL_FILES)
    if not files:
        raise UserError(f"{path} holds no .npy samples", FORMAT_HINT)
    if (path / "labels.npy").is_file():
        y = _load_npy(path / "labels.npy")
    else:
        y = _read_labels_txt(path / "labels.txt", [f.name for f in files])
    samples = [_load_npy(f) for f in files]
    shapes = {s.shape for s in samples}
    if len(shapes) > 1:
        raise UserError(f"{path}: the samples have different shapes ({', '.join(str(list(s)) for s in sorted(shapes))})",
                        "save every sample with the model input's shape")
    return np.stack(samples), y


def _read_labels_txt(path: Path, names: list[str]) -> np.ndarray:
    """labels.txt: `FILE LABEL [LABEL ...]` per line, one line for each sample file."""
    labels = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        try:
            labels[words[0]] = [float(w) for w in words[1:]]
        except ValueError:
            labels[words[0]] = []
        if not labels[words[0]]:
            raise UserError(f"{path}:{number}: {line.strip()!r} is not 'FILE LABEL'", "one 'FILE LABEL' per line")
    missing = [n for n in names if n not in labels]
    if missing:
        raise UserError(f"{path} has no label for {len(missing)} sample file(s), e.g. {missing[0]}",
                        "give every .npy file a line 'FILE LABEL'")
    rows = [labels[n] for n in names]
    if len({len(r) for r in rows}) > 1:
        raise UserError(f"{path}: the lines hold different numbers of labels", "give each file the same number")
    y = np.array(rows)
    y = y[:, 0] if y.shape[1] == 1 else y
    return y.astype(np.int64) if np.all(y == np.round(y)) and y.ndim == 1 else y


def _check_finite(a: np.ndarray, what: str) -> None:
    if not np.issubdtype(a.dtype, np.number) and a.dtype != np.bool_:
        raise UserError(f"{what} holds {a.dtype} values, not numbers", "save numeric arrays (float32 samples)")
    if np.issubdtype(a.dtype, np.floating) and not np.isfinite(a).all():
        rows = np.flatnonzero(~np.isfinite(a.reshape(len(a), -1)).all(axis=1))
        raise UserError(f"{what} holds NaN or Inf values (sample {rows[0]}{' and others' if len(rows) > 1 else ''})",
                        "clean or drop those samples")


def integer_valued(y: np.ndarray) -> bool:
    """1-D labels that are whole numbers (an integer dtype, or floats without a fraction)."""
    if y.ndim != 1:
        return False
    return bool(np.issubdtype(y.dtype, np.integer) or (np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y))))

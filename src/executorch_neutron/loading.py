"""Loading what the CLI is pointed at: models (`file.py:factory` or a `.pt2`) and input samples (.npy/.pt/.npz).

Every failure is a `UserError`: a one-line message, a hint and the CLI exit code.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2
MODEL_HELP = "path/to/file.py:factory (a function returning (module, example_inputs[, calibration])) or a .pt2 file"


class UserError(Exception):
    """Bad input from the user: a one-line message, a hint and an exit code."""

    def __init__(self, message: str, hint: str | None = None, code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.hint, self.code = hint, code


# --- loading models and tensors ------------------------------------------------------------------------------

def load_model(spec: str):
    """(module, example_inputs, calibration or None) from 'file.py:factory' or a torch.export .pt2 file."""
    import torch

    if spec.endswith(".pt2") and ":" not in Path(spec).name:
        path = Path(spec)
        if not path.is_file():
            raise UserError(f"no such file: {path}", MODEL_HELP)
        try:
            ep = torch.export.load(str(path))
        except Exception as exc:  # noqa: BLE001
            raise UserError(f"cannot load {path} as a torch.export program: {exc}", "save it with torch.export.save")
        args, _ = ep.example_inputs or ((), {})
        if not args:
            raise UserError(f"{path} holds no example inputs", "export with example inputs and torch.export.save")
        return ep.module(), tuple(args), None
    file, sep, name = spec.rpartition(":")
    if not sep or not file.endswith(".py"):
        raise UserError(f"cannot read the model spec {spec!r}", f"MODEL is {MODEL_HELP}")
    path = Path(file)
    if not path.is_file():
        raise UserError(f"no such file: {path}", f"MODEL is {MODEL_HELP}")
    mod_name = f"_neutron_user_{path.stem}"
    sys.path.insert(0, str(path.resolve().parent))
    try:
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        loader_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    factory = getattr(module, name, None)
    if not callable(factory):
        funcs = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
                       and getattr(v, "__module__", None) == mod_name)
        raise UserError(f"{path} has no function {name!r}", f"functions defined there: {', '.join(funcs) or 'none'}")
    made = factory()
    if not isinstance(made, (tuple, list)) or len(made) not in (2, 3):
        raise UserError(f"{spec} returned {type(made).__name__}", "the factory must return (module, example_inputs)"
                        " or (module, example_inputs, calibration_samples)")
    inputs = (made[1],) if isinstance(made[1], torch.Tensor) else tuple(made[1])
    return made[0], inputs, (list(made[2]) if len(made) == 3 else None)


def load_tensor(path: Path):
    """A tensor from .npy or .pt; a tuple of tensors from .npz or a .pt holding a tuple/list."""
    import numpy as np
    import torch

    if not path.is_file():
        raise UserError(f"no such file: {path}", "pass .npy, .npz or .pt files")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return torch.from_numpy(np.load(path))
    if suffix == ".npz":
        with np.load(path) as z:
            return tuple(torch.from_numpy(z[k]) for k in z.files)
    if suffix == ".pt":
        value = torch.load(path, weights_only=True)
        return tuple(value) if isinstance(value, (tuple, list)) else value
    raise UserError(f"{path}: unsupported file type {suffix!r}", "use .npy, .npz or .pt")


def _fit(x, like, what: str):
    """Cast to the example input's dtype; check the shape."""
    import torch

    if tuple(x.shape) != tuple(like.shape):
        raise UserError(f"{what} has shape {list(x.shape)} but the model takes {list(like.shape)}",
                        "save samples with the example input's shape (a leading batch of samples is split)")
    return x.to(like.dtype) if x.dtype != like.dtype and torch.is_floating_point(like) else x


def load_samples(directory: Path, inputs: tuple) -> list[tuple]:
    """Calibration samples: every .npy/.npz/.pt file of a directory, sorted by name; arrays of shape
    (N, *input_shape) are split into N samples (single-input models)."""
    if not directory.is_dir():
        raise UserError(f"no such directory: {directory}", "--calibration takes a directory of .npy/.npz/.pt files")
    files = sorted(p for p in directory.iterdir() if p.suffix.lower() in (".npy", ".npz", ".pt"))
    if not files:
        raise UserError(f"{directory} holds no .npy, .npz or .pt files", "save one sample per file with numpy.save")
    samples = []
    for f in files:
        value = load_tensor(f)
        if not isinstance(value, tuple):
            if len(inputs) == 1 and value.dim() == inputs[0].dim() + 1 and tuple(value.shape[1:]) == tuple(
                    inputs[0].shape):
                samples += [(_fit(v, inputs[0], f.name),) for v in value]
                continue
            value = (value,)
        if len(value) != len(inputs):
            raise UserError(f"{f.name} holds {len(value)} tensor(s), the model takes {len(inputs)}",
                            "use .npz or a .pt tuple with one array per model input")
        samples.append(tuple(_fit(v, x, f.name) for v, x in zip(value, inputs)))
    return samples

"""Loading what the CLI is pointed at: models (`file.py:factory` or a `.pt2`) and input samples (.npy/.pt/.npz).

Every failure is a `UserError`: a one-line message, a hint and the CLI exit code.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import sys
import warnings
from pathlib import Path

from ..core.messages import first_line

EXIT_BAD_INPUT = 2
MODEL_HELP = "path/to/file.py:factory (a function returning (module, example_inputs[, calibration])) or a .pt2 file"


class UserError(Exception):
    """Bad input from the user: a one-line message, a hint and an exit code."""

    def __init__(self, message: str, hint: str | None = None, code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.hint, self.code = hint, code


# --- loading models and tensors ------------------------------------------------------------------------------

def model_file(spec: str) -> Path:
    """The file a model spec names: the .pt2 itself, or the .py of 'file.py:factory' (a `.pt2` whose name holds
    ':' is that file when it exists)."""
    if spec.endswith(".pt2") and (":" not in Path(spec).name or Path(spec).exists()):
        return Path(spec)
    file, sep, _ = spec.rpartition(":")
    return Path(file if sep else spec)


def _check_is_file(path: Path, what: str, hint: str) -> None:
    if path.is_dir():
        raise UserError(f"{path} is a directory, not {what}", hint)
    if not path.is_file():
        raise UserError(f"no such file: {path}", hint)


def check_model_spec(spec: str) -> Path:
    """The model file of a spec ('file.py:factory' or a .pt2 file), after the checks that need no torch (the CLI
    refuses a wrong path before importing torch)."""
    path = model_file(spec)
    if path.suffix == ".pt2" and str(path) == spec:
        _check_is_file(path, "a .pt2 file", MODEL_HELP)
        return path
    file, sep, _ = spec.rpartition(":")
    if not sep or not file.endswith(".py"):
        if path.is_dir():
            raise UserError(f"{path} is a directory, not a model file", f"MODEL is {MODEL_HELP}")
        raise UserError(f"cannot read the model spec {spec!r}", f"MODEL is {MODEL_HELP}")
    _check_is_file(path, "a Python file", f"MODEL is {MODEL_HELP}")
    return path


def load_model(spec: str):
    """(module, example_inputs, calibration or None) from 'file.py:factory' or a torch.export .pt2 file."""
    path = check_model_spec(spec)
    import torch

    if path.suffix == ".pt2" and str(path) == spec:
        try:
            with _quiet_loading():
                ep = torch.export.load(str(path))
        except Exception as exc:  # noqa: BLE001
            raise UserError(f"cannot load {path} as a torch.export program ({type(exc).__name__}: "
                            f"{first_line(exc)})", "save it with torch.export.save(torch.export.export(model, "
                                                   "inputs), 'model.pt2')") from None
        args, _ = ep.example_inputs or ((), {})
        if not args:
            raise UserError(f"{path} holds no example inputs", "export with example inputs and torch.export.save")
        return ep.module(), tuple(args), None
    name = spec.rpartition(":")[2]
    mod_name = f"_neutron_user_{path.stem}"
    sys.path.insert(0, str(path.resolve().parent))
    try:
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        _call_user_code(f"{path} (importing it)", loader_spec.loader.exec_module, module)
    finally:
        sys.path.pop(0)
    factory = getattr(module, name, None)
    if not callable(factory):
        funcs = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
                       and getattr(v, "__module__", None) == mod_name)
        raise UserError(f"{path} has no function {name!r}", f"functions defined there: {', '.join(funcs) or 'none'}")
    return check_factory_result(spec, _call_user_code(spec, factory))


def _call_user_code(what: str, fn, *args):
    """Call the user's factory (or module body): its failure, or a sys.exit() in it, is a UserError that shows
    the user's own error."""
    try:
        return fn(*args)
    except SystemExit as exc:
        raise UserError(f"{what} called sys.exit({exc.code!r}) instead of returning a model",
                        "return (module, example_inputs[, calibration]); do not exit from the factory") from None
    except (UserError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the user's code raises
        raise UserError(f"{what} failed: {type(exc).__name__}: {first_line(exc)}",
                        "fix the factory (--verbose shows the traceback)") from exc


_FACTORY_SHAPE = "the factory must return (module, example_inputs) or (module, example_inputs, calibration_samples)"


def check_factory_result(spec: str, made):
    """(module, inputs tuple, calibration list or None) from what a factory returned, or a UserError naming the
    item that is wrong."""
    import torch

    if not isinstance(made, (tuple, list)) or len(made) not in (2, 3):
        what = f"a {len(made)}-tuple" if isinstance(made, (tuple, list)) else type(made).__name__
        raise UserError(f"{spec} returned {what}", _FACTORY_SHAPE)
    model, inputs = made[0], made[1]
    if not isinstance(model, torch.nn.Module):
        swapped = " (are the items swapped?)" if isinstance(inputs, torch.nn.Module) else ""
        raise UserError(f"{spec}: item 0 is {type(model).__name__}, not a torch.nn.Module{swapped}", _FACTORY_SHAPE)
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else inputs
    if not isinstance(inputs, (tuple, list)) or not inputs or not all(isinstance(x, torch.Tensor) for x in inputs):
        raise UserError(f"{spec}: item 1 (example inputs) is {_describe(made[1])}, not a tensor or a tuple of "
                        f"tensors", _FACTORY_SHAPE)
    inputs = tuple(inputs)
    if len(made) == 2:
        return model, inputs, None
    try:
        calibration = [(s,) if isinstance(s, torch.Tensor) else tuple(s) for s in made[2]]
    except TypeError:
        calibration = None
    bad = calibration is None or not calibration or any(
        len(s) != len(inputs) or not all(isinstance(x, torch.Tensor) for x in s) for s in calibration)
    if bad:
        raise UserError(f"{spec}: item 2 (calibration samples) is {_describe(made[2])}; it must be a non-empty list "
                        f"of samples, each a tensor or a tuple of {len(inputs)} tensor(s) like the example inputs",
                        _FACTORY_SHAPE)
    for i, sample in enumerate(calibration):
        for j, (x, like) in enumerate(zip(sample, inputs)):
            if tuple(x.shape) != tuple(like.shape):
                raise UserError(f"{spec}: item 2 (calibration samples): calibration sample {i} input {j} has shape "
                                f"{list(x.shape)} but the example input has {list(like.shape)}",
                                "calibration samples must have the example inputs' shapes")
    return model, inputs, calibration


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {', '.join(type(v).__name__ for v in value[:4])}" if value else "empty"
    return type(value).__name__


class _quiet_loading:
    """Silence the warnings torch.export.load prints about a file it cannot read (the error says it once)."""

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)

    def __exit__(self, *exc):
        logging.disable(logging.NOTSET)
        self._warnings.__exit__(*exc)


def check_inputs_fit(model, inputs: tuple, what: str = "the example inputs") -> None:
    """Run the model once on its inputs so that a mismatch is one line, not a torch.export traceback."""
    import torch

    try:
        with torch.no_grad():
            model(*(x.clone() for x in inputs))  # a forward() that changes its input must not change the inputs
    except Exception as exc:  # noqa: BLE001 - whatever forward() raises
        shapes = ", ".join(f"{x.dtype}{list(x.shape)}" for x in inputs)
        raise UserError(f"{what} ({shapes}) do not fit the model: {type(exc).__name__}: {first_line(exc)}",
                        "return example inputs with the shapes and dtypes the model's forward() takes") from None


def load_tensor(path: Path):
    """A tensor from .npy or .pt; a tuple of tensors from .npz or a .pt holding a tuple/list."""
    import numpy as np
    import torch

    _check_is_file(path, "a tensor file", "pass .npy, .npz or .pt files (one --input FILE per model input; a "
                                          "directory of samples goes to --calibration or --samples)")
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".npz", ".pt"):
        raise UserError(f"{path}: unsupported file type {suffix!r}", "use .npy, .npz or .pt")
    try:
        if suffix == ".npy":
            return torch.from_numpy(np.load(path))
        if suffix == ".npz":
            with np.load(path) as z:
                return tuple(torch.from_numpy(z[k]) for k in z.files)
        value = torch.load(path, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - numpy/zip/pickle errors come in many types
        raise UserError(f"cannot read {path} ({type(exc).__name__}: {first_line(exc)})",
                        "write it again with numpy.save / numpy.savez / torch.save") from None
    if isinstance(value, (tuple, list)) and all(isinstance(v, torch.Tensor) for v in value):
        return tuple(value)
    if not isinstance(value, torch.Tensor):
        raise UserError(f"{path} holds {_describe(value)}, not a tensor or a tuple of tensors",
                        "save a tensor (torch.save(x, f)) or a tuple of tensors")
    return value


_FLOAT32_MAX = 3.4028234663852886e38
CALIBRATION_HINT = "calibration samples must be finite, with a range float32 can hold: clean, drop or scale the sample"


def calibration_problem(sample: tuple) -> str | None:
    """Why a calibration sample cannot be calibrated on, or None: NaN or Inf (the observers would fail with 'min
    nan should be less than max'), or a value range whose int8 scale overflows float32 (the scale becomes Inf and
    the quantize kernel aborts the process)."""
    import torch

    for i, x in enumerate(sample):
        if not torch.is_floating_point(x) or not x.numel():
            continue
        lo, hi = (float(v) for v in torch.aminmax(x))  # one pass: a NaN makes both NaN, an Inf is the min or max
        if not (math.isfinite(lo) and math.isfinite(hi)):
            kinds = [k for k, bad in (("NaN", torch.isnan(x).any()), ("Inf", torch.isinf(x).any())) if bad]
            return f"input {i} holds {' and '.join(kinds)} values"
        if max(hi, 0.0) - min(lo, 0.0) > _FLOAT32_MAX:  # observers widen the range to include 0
            return f"input {i} spans [{lo:.3g}, {hi:.3g}]: the int8 scale would overflow float32"
    return None


def check_finite(sample: tuple, what: str) -> None:
    """Refuse a calibration sample that `calibration_problem` finds fault with (UserError)."""
    problem = calibration_problem(sample)
    if problem:
        raise UserError(f"{what} ({problem})", CALIBRATION_HINT)


def random_samples(inputs: tuple, n: int, seed: int = 1) -> list[tuple]:
    """Random calibration samples that follow the example inputs' dtypes: floats ~ N(0, 1); integer and bool
    inputs (indices, masks) drawn inside the example's own value range, so that an index stays in range."""
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        sample = []
        for x in inputs:
            if torch.is_floating_point(x):
                sample.append(torch.randn(x.shape, generator=g).to(x.dtype))
            elif x.dtype == torch.bool:
                sample.append(torch.randint(0, 2, x.shape, generator=g).bool())
            elif x.numel():
                lo, hi = int(x.min()), int(x.max())
                sample.append(torch.randint(lo, hi + 1, x.shape, generator=g, dtype=x.dtype))
            else:
                sample.append(x.clone())
        out.append(tuple(sample))
    return out


def _fit(x, like, what: str):
    """Cast to the example input's dtype; check the shape."""
    import torch

    if tuple(x.shape) != tuple(like.shape):
        raise UserError(f"{what} has shape {list(x.shape)} but the model takes {list(like.shape)}",
                        "save samples with the example input's shape (a leading batch of samples is split)")
    return x.to(like.dtype) if x.dtype != like.dtype and torch.is_floating_point(like) else x


def load_samples(directory: Path, inputs: tuple) -> list[tuple]:
    """Calibration samples: every .npy/.npz/.pt file of a directory, sorted by name, or one such file; arrays of
    shape (N, *input_shape) are split into N samples (single-input models)."""
    if directory.is_file():
        if directory.suffix.lower() not in (".npy", ".npz", ".pt"):
            raise UserError(f"{directory} is not a .npy, .npz or .pt file",
                            "--calibration takes a directory of .npy/.npz/.pt files, or one such file")
        files = [directory]
    elif not directory.is_dir():
        raise UserError(f"no such file or directory: {directory}",
                        "--calibration takes a directory of .npy/.npz/.pt files, or one such file")
    else:
        files = sorted(p for p in directory.iterdir() if p.suffix.lower() in (".npy", ".npz", ".pt"))
    if not files:
        raise UserError(f"{directory} holds no .npy, .npz or .pt files", "save one sample per file with numpy.save")
    samples = []
    for f in files:
        value = load_tensor(f)
        check_finite(value if isinstance(value, tuple) else (value,), f"calibration file {f}")
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
    if not samples:
        raise UserError(f"{directory} holds no calibration samples (its files hold empty batches)",
                        "calibration needs at least one sample: save arrays with at least one sample")
    return samples

"""`evaluate`: the number a user is judged by, on their labelled data set, for every stage of the flow.

It lowers the model (or takes a `LoweringResult`), then runs every sample through the float model, PyTorch's
quantized model (`convert_pt2e`), the .pte on the host (stock ExecuTorch runtime + our host back end) and, given a
serial port, the .pte on a board (NXP's executorch_modelrunner firmware, one upload); each row gets the task's
metrics against the labels (metrics.py). Without calibration samples the model is calibrated on the first
`calibration_samples` samples of the data set, and the result says so.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import torch

from ..core.messages import first_line
from ..lowering import lower
from ..models.loading import EXIT_BAD_INPUT, UserError
from ..runtime import load
from . import metrics
from .data import Dataset, integer_valued, load_dataset
from .result import BOARD, FLOAT, HOST, QUANTIZED, EvaluationResult, Row

EXIT_FAIL = 1
SHAPE_HINT = "save x as (N, *input shape), or (N, *input shape without its batch of 1)"


def evaluate(model: torch.nn.Module | None = None, data=None, inputs=None, task: str | None = None,
             target: str | None = None, *, result=None, calibration=None, calibration_samples: int = 32,
             limit: int | None = None, device: str | None = None, baud: int = 115200, runner="modelrunner",
             timeout: float = 10.0, progress=None, **lower_options) -> EvaluationResult:
    """Top-1/top-5 (classification) or RMSE/MAE/cosine/SQNR (regression, reconstruction) of each stage.

    model: the float model (optional with `result`; with quantize_model=False it is the quantized model).
    data: a path (`.npz` with x and y, or a directory of .npy samples with labels.txt / labels.npy), a `Dataset`
        or an (x, y) pair of arrays. limit: evaluate only its first `limit` samples.
    inputs: example inputs (default: the first sample). task: "classification", "regression" or None (inferred:
        classification for whole-number 1-D labels that index the model's outputs).
    calibration: calibration samples (input tuples); default: the data set's first `calibration_samples` samples.
    result: an existing LoweringResult (nothing is lowered). device: a serial port: also run on the board.
    target, lower_options, progress: as for `lower()`; progress also draws a bar per row over the samples.
    """
    dataset = _dataset(data, limit)
    if result is None and model is None:
        raise ValueError("evaluate() needs a model, or result=LoweringResult")
    samples = _samples(dataset, _input_shape(inputs, result, dataset), inputs)
    inputs = tuple(inputs) if inputs is not None else samples[0]
    if isinstance(model, torch.nn.Module) and model.training:  # as lower() sees it; the caller's model untouched
        model = copy.deepcopy(model).eval()
    first = result.quantized_model if result is not None and result.quantized_model is not None else model
    with torch.no_grad():
        out_size = _output0(first(*samples[0])).size
    task, task_source = _task(task, dataset.y, out_size)
    labels = _labels(task, dataset.y, out_size)
    if result is None:
        note, calibration = _calibration(calibration, samples, calibration_samples, lower_options)
        result = lower(model, inputs, calibration, target, progress=progress, **lower_options)
    else:
        note = "as the given LoweringResult was calibrated"
    outputs = _run_rows(model, result, samples, lower_options.get("quantize_model", True), progress)
    if device:
        outputs[BOARD] = _on_board(result.pte, samples, device, baud, runner, timeout, progress)
    rows = [Row(name, metrics.compute(task, out, labels)) for name, out in outputs.items()]
    return EvaluationResult(task, task_source, result.spec.target_info.name, dataset.source, len(samples), note, rows,
                            outputs, result)


def _calibration(given, samples: list, first: int, lower_options: dict) -> tuple[str, list | None]:
    """(what the model is calibrated on, in words; the samples): those given, else the data set's first ones."""
    if not lower_options.get("quantize_model", True):
        return "none (the model is already quantized)", None
    if given is not None:
        given = list(given)
        return f"{len(given)} sample(s) given", given
    return f"the first {min(first, len(samples))} sample(s) of the data set (also evaluated)", samples[:first]


def _dataset(data, limit: int | None) -> Dataset:
    if isinstance(data, Dataset):
        return Dataset(data.x[:limit], data.y[:limit], data.source) if limit else data
    if isinstance(data, (str, Path)):
        return load_dataset(data, limit)
    if isinstance(data, tuple) and len(data) == 2:
        x, y = (np.asarray(a) for a in data)
        if len(x) != len(y):
            raise UserError(f"x holds {len(x)} samples but y holds {len(y)} labels", "give one label per sample")
        return Dataset(x[:limit], y[:limit], "arrays")
    raise ValueError("data: a path, a Dataset or an (x, y) pair of arrays")


def _input_shape(inputs, result, dataset: Dataset) -> tuple[int, ...]:
    """The model input's shape: the example input's, the .pte's, or a first sample's with a batch of 1."""
    if inputs is not None:
        if len(inputs) != 1:
            raise UserError(f"the model takes {len(inputs)} inputs; evaluate feeds one", "evaluate single-input models")
        return tuple(inputs[0].shape)
    if result is not None:
        from ..pte import inspect_pte

        method_inputs = inspect_pte(result.pte).methods[0].inputs
        if len(method_inputs) != 1:
            raise UserError(f"the program takes {len(method_inputs)} inputs; evaluate feeds one",
                            "evaluate single-input models")
        return tuple(method_inputs[0].shape)
    return (1, *dataset.x.shape[1:])


def _samples(dataset: Dataset, shape: tuple[int, ...], inputs) -> list[tuple[torch.Tensor]]:
    """One input tuple per sample, in the model input's shape and dtype (float32 unless the example says)."""
    x = dataset.x
    if tuple(x.shape[1:]) == shape:
        rows = list(x)
    elif shape[:1] == (1,) and tuple(x.shape[1:]) == shape[1:]:
        rows = [s[None] for s in x]
    else:
        raise UserError(f"the samples of {dataset.source} have shape {list(x.shape[1:])} (x is {list(x.shape)}) but "
                        f"the model takes {list(shape)}", SHAPE_HINT)
    dtype = inputs[0].dtype if inputs is not None else torch.float32
    return [(torch.from_numpy(r.copy()).to(dtype),) for r in rows]  # a copy: numpy's s[None] has a 0 stride


def _output0(out) -> np.ndarray:
    """Output 0 of a model call (a tensor, or the first tensor of a tuple/list/dict), flattened."""
    leaves, _ = torch.utils._pytree.tree_flatten(out)
    tensor = next(t for t in leaves if isinstance(t, torch.Tensor))
    return tensor.detach().float().numpy().ravel()


def _task(task: str | None, y: np.ndarray, out_size: int) -> tuple[str, str]:
    if task is not None:
        if task not in metrics.TASKS:
            raise UserError(f"unknown task {task!r}", f"pass one of {', '.join(metrics.TASKS)}")
        return task, "given"
    if integer_valued(y) and out_size > 1 and y.min() >= 0 and y.max() < out_size:
        return metrics.CLASSIFICATION, (f"inferred: whole-number labels {int(y.min())}..{int(y.max())} index the "
                                        f"model's {out_size} outputs; give the task to choose the other")
    if y.ndim != 1:
        why = f"y holds {int(np.prod(y.shape[1:]))} values per sample"
    elif not integer_valued(y):
        why = "the labels are not whole numbers"
    else:
        why = f"labels {y.min():g}..{y.max():g} do not index the model's {out_size} output(s)"
    return metrics.REGRESSION, f"inferred: {why}; give the task to choose the other"


def _labels(task: str, y: np.ndarray, out_size: int) -> np.ndarray:
    """The labels as the metrics take them, checked against the model's output 0."""
    if task == metrics.CLASSIFICATION:
        if not integer_valued(y):
            raise UserError(f"classification needs one whole-number label per sample; y has shape {list(y.shape)} and "
                            f"dtype {y.dtype}", "save y as integer class indices, or use --task regression")
        bad = np.flatnonzero((y < 0) | (y >= out_size))
        if bad.size:
            raise UserError(f"label {y[bad[0]]:g} of sample {bad[0]} is outside the classifier's {out_size} outputs "
                            f"(0..{out_size - 1})", "labels are class indices into the model's output")
        return y.astype(np.int64)
    per_sample = int(np.prod(y.shape[1:], dtype=np.int64))
    if per_sample != out_size:
        raise UserError(f"y holds {per_sample} value(s) per sample but the model's output 0 has {out_size}",
                        "save one target per output value (for an autoencoder, y = x)")
    return y.reshape(len(y), -1).astype(np.float64)


def _each(progress, samples, desc: str):
    return progress(samples, desc=desc, unit="sample") if progress else samples


def _run_rows(model, result, samples, quantize_model: bool, progress) -> dict[str, np.ndarray]:
    """Output 0 of every sample, per row: the float model, PyTorch's quantized model, the .pte on the host."""
    quantized = result.quantized_model if result.quantized_model is not None else model
    float_model = model if quantize_model and model is not None and model is not quantized else None
    program = load(result.pte)
    rows = {FLOAT: float_model, QUANTIZED: quantized, HOST: lambda *x: program.execute(list(x))}
    outputs = {}
    with torch.no_grad():
        for name, fn in rows.items():
            if fn is not None:
                outputs[name] = np.stack([_output0(fn(*x)) for x in _each(progress, samples, name)])
    return outputs


def _on_board(pte: bytes, samples, port: str, baud: int, runner, timeout: float, progress) -> np.ndarray:
    """Output 0 of every sample run on the board at `port` (one upload); its errors as one-line UserErrors."""
    from ..board.cli_support import GUIDE
    from ..board.client import BoardProtocolError, BoardTimeout, BoardUnavailable
    from ..board.session import BoardRunError, WillNotLoad, run_samples_on_board
    from ..board.tensors import TensorMismatch

    try:
        runs = run_samples_on_board(pte, samples, port, baud, runner, timeout, progress=progress)
    except (WillNotLoad, BoardUnavailable, TensorMismatch) as exc:
        raise UserError(first_line(exc), f"see {GUIDE}", EXIT_BAD_INPUT) from None
    except (BoardRunError, BoardTimeout, BoardProtocolError) as exc:
        raise UserError(first_line(exc), f"see {GUIDE}", EXIT_FAIL) from None
    return np.stack([_output0(r.outputs) for r in runs])

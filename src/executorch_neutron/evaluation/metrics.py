"""The numbers a model is judged by, from its outputs and the data set's labels (numpy only).

Classification: top-1 and top-5 accuracy (top-5 only with more than 5 classes: with 5 or fewer it is always 100 %). Regression and reconstruction:
RMSE, MAE, cosine similarity and SQNR (dB) of the predictions against the targets, each over the whole data set
(every sample's values flattened into one vector).
"""

from __future__ import annotations

import math

import numpy as np

from ..numerics import sqnr

CLASSIFICATION, REGRESSION = "classification", "regression"
TASKS = (CLASSIFICATION, REGRESSION)
COLUMNS = {CLASSIFICATION: ("top-1", "top-5"), REGRESSION: ("RMSE", "MAE", "cosine", "SQNR dB")}


def top_k(logits: np.ndarray, labels: np.ndarray, k: int) -> float:
    """Share of the samples whose label is among the k largest of its logits ((N, C) logits, (N,) labels)."""
    best = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    return float(np.mean(np.any(best == labels[:, None], axis=1)))


def classification(logits: np.ndarray, labels: np.ndarray) -> dict[str, float | None]:
    classes = logits.shape[1]
    return {"top-1": top_k(logits, labels, 1), "top-5": top_k(logits, labels, 5) if classes > 5 else None}


def cosine(a: np.ndarray, b: np.ndarray) -> float | None:
    """Cosine similarity of two flattened arrays; None when either is all zeros."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return None if norm == 0.0 else float(np.dot(a, b) / norm)


def regression(predictions: np.ndarray, targets: np.ndarray) -> dict[str, float | None]:
    p, t = np.asarray(predictions, np.float64).ravel(), np.asarray(targets, np.float64).ravel()
    error = p - t
    return {"RMSE": float(np.sqrt(np.mean(error ** 2))), "MAE": float(np.mean(np.abs(error))),
            "cosine": cosine(p, t), "SQNR dB": sqnr(t, p)}


def compute(task: str, outputs: np.ndarray, labels: np.ndarray) -> dict[str, float | None]:
    """The task's metrics of one row: (N, C) logits and (N,) labels, or (N, ...) predictions and targets."""
    return classification(outputs, labels) if task == CLASSIFICATION else regression(outputs, labels)


def format_value(column: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    if column.startswith("top-"):
        return f"{100 * value:.2f}%"
    if column == "SQNR dB":
        return "inf" if math.isinf(value) else f"{value:.2f}"
    if column == "cosine":
        return f"{value:.5f}"
    return f"{value:.5g}"

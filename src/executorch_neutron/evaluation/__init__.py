"""Evaluation on a user's labelled data set: the accuracy (top-1 / top-5) or error (RMSE, MAE, cosine, SQNR) of
the float model, PyTorch's quantized model, the .pte on the host and the .pte on a board.

    from executorch_neutron.evaluation import evaluate
    r = evaluate(model, "digits.npz", target="imxrt700")   # EvaluationResult: print(r), r.to_dict(), r.save_html(f)

Modules: data.py (the data set's forms, read and checked without torch), metrics.py (the numbers, numpy only),
run.py (`evaluate`: lowering, the rows, the checks against the model), result.py (table, dict, HTML section),
auto_precision.py (`auto_precision`: the layers to promote until the .pte reaches an SQNR target).
Names are imported on first use, so that `evaluation.data` loads without torch.
"""

from __future__ import annotations

import importlib

_LAZY = {"evaluate": ".run", "EvaluationResult": ".result", "Row": ".result", "Dataset": ".data",
         "load_dataset": ".data", "auto_precision": ".auto_precision", "AutoPrecisionResult": ".auto_precision"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'executorch_neutron.evaluation' has no attribute {name!r}")

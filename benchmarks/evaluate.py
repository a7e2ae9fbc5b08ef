"""`evaluate` on trained models and data sets scikit-learn ships: the 8x8 digits CNN (top-1 / top-5), the
diabetes MLP regressor and a digits autoencoder (RMSE / MAE / cosine / SQNR against the targets; the autoencoder's
target is its input), each trained here with fixed seeds
(tests/trained_models.py), lowered per target (calibrated on the first 32 test samples) and evaluated on its
held-out quarter: float PyTorch, PyTorch's quantized model and the .pte on the host. No pass/fail.

    python benchmarks/evaluate.py [--targets imxrt700 imx93]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import trained_models  # noqa: E402

from executorch_neutron.evaluation import Dataset, evaluate  # noqa: E402

MODELS = {"digits CNN": (trained_models.digits_cnn, "load_digits, held-out quarter"),
          "diabetes MLP": (trained_models.diabetes_mlp, "load_diabetes, held-out quarter"),
          "digits autoencoder": (trained_models.digits_autoencoder, "load_digits, held-out quarter, y = x")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["imxrt700", "imx93"])
    args = parser.parse_args(argv)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    for name, (train, source) in MODELS.items():
        start = time.perf_counter()
        model, inputs, (x, y) = train()
        data = Dataset(x, y, source)
        print(f"## {name} (trained in {time.perf_counter() - start:.1f} s)\n")
        for target in args.targets:
            start = time.perf_counter()
            with contextlib.redirect_stderr(io.StringIO()):  # the host runtime's own log lines
                result = evaluate(model, data, inputs, target=target)
            print(f"{result}\n({time.perf_counter() - start:.1f} s)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where all-int8 loses accuracy, what A16W8 and automatic mixed precision recover, and at what NPU cost.

Models trained here with fixed seeds, on data a package ships or generated here: a 1-D denoising autoencoder on
synthetic sensor signals (sines + Gaussian noise + rare large glitches, which widen the input's int8 range), the
diabetes MLP regressor and the 8x8 digits CNN (tests/trained_models.py). Per model and target, calibrated on the
first 32 held-out samples and evaluated on the held-out set (`evaluate`, the .pte on the host):
- all-int8: the default lowering;
- A16W8: int16 activations, int8 weights (`quantizer_for(target, activations="int16")`), on targets whose NPU has
  them (`target.activation_dtypes`: the Ethos-U targets), else n/a;
- auto: `auto_precision` at the model's SQNR target (int8 -> int16 where the target has it -> float on the CPU);
- float: the PyTorch model itself (on the CPU; no NPU figures).
Columns: the task metric (RMSE, top-1), the SQNR of the .pte against the float model on the held-out set, the back
end's estimate (Vela's cycles on the Ethos-U targets, the Neutron estimate's on imxrt700), the estimated time (NPU
and CPU for the Neutron estimate, NPU alone for Vela's), the nodes left on the CPU and the memory section's totals.

    python benchmarks/precision.py [--targets imxrt700 imx93] [--write-docs]
    python benchmarks/precision.py --targets ethos-u55-128 --write-docs   # the page's second block
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _docs  # noqa: E402
import trained_models  # noqa: E402

from executorch_neutron import auto_precision, get_target, lower  # noqa: E402
from executorch_neutron.evaluation import Dataset, evaluate  # noqa: E402
from executorch_neutron.evaluation.result import FLOAT, HOST  # noqa: E402
from executorch_neutron.numerics import sqnr  # noqa: E402
from executorch_neutron.quantizer import quantizer_for  # noqa: E402
from executorch_neutron.target import ETHOS_U  # noqa: E402

CALIBRATION = 32
SIGNAL = 128


def sensor_signals(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(noisy, clean) signals of shape (n, 1, SIGNAL): a sum of 1-3 sines (amplitude 0.2-1, 1-12 periods per
    window), Gaussian noise (sigma 0.1) and, in 2% of the time steps, a glitch of +-20 to +-60
    (a sensor's spikes: they set the int8 range of the input and of every layer that still carries them)."""
    rng = np.random.default_rng(seed)
    t = np.arange(SIGNAL) / SIGNAL
    clean = np.zeros((n, SIGNAL))
    for i in range(n):
        for _ in range(rng.integers(1, 4)):
            clean[i] += rng.uniform(0.2, 1.0) * np.sin(2 * np.pi * rng.uniform(1, 12) * t + rng.uniform(0, 2 * np.pi))
    glitches = (rng.random((n, SIGNAL)) < 0.02) * rng.choice([-1, 1], (n, SIGNAL)) * rng.uniform(20, 60, (n, SIGNAL))
    noisy = clean + rng.normal(0, 0.1, (n, SIGNAL)) + glitches
    return noisy[:, None].astype(np.float32), clean[:, None].astype(np.float32)


def denoising_autoencoder(epochs: int = 20):
    """A 1-D convolutional denoising autoencoder (128 steps -> 64 x 16 channels -> 128) trained on sensor_signals."""
    torch.manual_seed(0)
    x_train, y_train = sensor_signals(1024, seed=0)
    x_test, y_test = sensor_signals(256, seed=1)
    model = nn.Sequential(
        nn.Conv1d(1, 8, 7, padding=3), nn.ReLU(),
        nn.Conv1d(8, 16, 5, stride=2, padding=2), nn.ReLU(),
        nn.Conv1d(16, 16, 5, padding=2), nn.ReLU(),
        nn.ConvTranspose1d(16, 8, 4, stride=2, padding=1), nn.ReLU(),
        nn.Conv1d(8, 1, 5, padding=2))
    trained_models._fit(model, torch.from_numpy(x_train), torch.from_numpy(y_train), nn.functional.mse_loss, epochs,
                        3e-3)
    return model, (torch.from_numpy(x_test[:1]),), (x_test, y_test)


#: name -> (training function, where the data comes from, the task metric, the automatic search's SQNR target)
MODELS = {
    "sensor denoising autoencoder": (denoising_autoencoder, "sines + noise + glitches (generated)", "RMSE", 35.0),
    "diabetes MLP": (trained_models.diabetes_mlp, "load_diabetes, held-out quarter", "RMSE", 50.0),
    "digits CNN": (trained_models.digits_cnn, "load_digits, held-out quarter", "top-1", 45.0),
}


@contextlib.contextmanager
def _quiet():
    """Drop what the stages print (the host runtime's log lines) from the page's capture."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def _fmt_metric(name: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.2f}%" if name == "top-1" else f"{value:.4g}"


def _db(value: float | None) -> str:
    return "n/a" if value is None else "inf" if np.isinf(value) else f"{value:.1f}"


def _either(a, b):
    return a if a is not None else b


def _row(label: str, metric: str, ev, lowering) -> str:
    """One table row: the .pte of `lowering` evaluated (`ev`), or the float model (lowering None)."""
    name = HOST if lowering is not None else FLOAT
    value = ev.row(name).metrics.get(metric)
    if lowering is None:
        return f"| {label} | {_fmt_metric(metric, value)} | inf | CPU | | | |"
    report = lowering.report
    est = report.estimate or {}
    cycles = f"{est['cycles']:,}" if est.get("cycles") is not None else "n/a"
    seconds = f"{est['inference_seconds'] * 1e6:.1f} us" if est.get("inference_seconds") is not None else "n/a"
    memory = ", ".join(f"{t['where']} {t['required_bytes']:,} B" for t in report.memory.totals())
    quality = sqnr(ev.outputs[FLOAT], ev.outputs[HOST])
    return (f"| {label} | {_fmt_metric(metric, value)} | {_db(quality)} | {cycles} | {seconds} | "
            f"{len(report.rejections)} | {memory} |")


def measure(name: str, targets: list[str]) -> None:
    train, source, metric, target_db = MODELS[name]
    start = time.perf_counter()
    model, inputs, (x, y) = train()
    data = Dataset(x, y, source)
    calibration = [(torch.from_numpy(x[i:i + 1]),) for i in range(CALIBRATION)]
    print(f"### {name}\n")
    print(f"{source}; {len(x)} held-out samples; trained in {time.perf_counter() - start:.0f} s; automatic mixed "
          f"precision target {target_db:g} dB SQNR vs float (on the {CALIBRATION} calibration samples).\n")
    for target in targets:
        info = get_target(target)
        estimate = "Vela cycles" if info.kind == ETHOS_U else "Neutron estimate cycles"
        print(f"{target} ({info.npu}):\n")
        print(f"| configuration | {metric} | SQNR vs float (dB) | {estimate} | est. time | CPU nodes | memory |")
        print("|---|---|---|---|---|---|---|")

        def run(lowering):
            with _quiet():
                return evaluate(model, data, inputs, target=target, result=lowering)

        with _quiet():
            auto = auto_precision(model, inputs, calibration, target, sqnr_db=target_db)
        base_ev = run(auto.baseline_lowering)
        print(_row("all-int8", metric, base_ev, auto.baseline_lowering))
        if "int16" in info.activation_dtypes:
            with _quiet():
                a16w8 = lower(model, inputs, calibration, target=target,
                              quantizer=quantizer_for(target, activations="int16"))
            print(_row("A16W8", metric, run(a16w8), a16w8))
        else:
            print(f"| A16W8 | n/a: int16 not available on {target} | | | | | |")
        chosen = ", ".join(f"{k}={v}" for k, v in auto.rules.items()) or "nothing promoted"
        reached = "" if auto.reached else ", target not reached"
        print(_row(f"auto {target_db:g} dB ({chosen}{reached})", metric, run(auto.lowering), auto.lowering))
        print(_row("float", metric, base_ev, None))
        print()
        print(f"search on {target}: all-int8 {_db(auto.steps[0].sqnr_db)} dB; one layer promoted alone: "
              + ", ".join(f"{k} {_db(v)}" for k, v in sorted(auto.sensitivity.items(), key=lambda kv: -kv[1]))
              + " dB; steps: " + (", ".join(f"{s.action} {s.layer} to {s.precision} "
                                             f"{_db(_either(s.sqnr_db, s.pte_sqnr_db))}"
                                             for s in auto.steps[1:]) or "none")
              + f"; the chosen .pte {_db(auto.sqnr_db)} dB on the calibration samples\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["imxrt700", "imx93"])
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    _docs.add_argument(parser)
    args = parser.parse_args(argv)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    with _docs.figures(args, "benchmarks/precision.py", "precision", "Precision: all-int8, A16W8, automatic mixed "
                       "precision"):
        for name in args.models:
            measure(name, args.targets)
    return 0


if __name__ == "__main__":
    sys.exit(main())

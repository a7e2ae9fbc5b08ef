"""Models as other back ends' test suites write them (tests/peers/peer_models.py), lowered per target: partitions,
CPU compute nodes, and the .pte on the host against PyTorch's quantized model and the float model.

Per model and target: the partitions and CPU nodes of the lowering (random weights, batch norms warmed up, 16
calibration samples), then on 8 other samples: the SQNR of the .pte's output against the float model's, the same
for PyTorch's quantized model (convert_pt2e, the reference), their difference, and the largest difference between
the .pte and the quantized model in output quantization steps. No pass/fail.

    python benchmarks/peer_models.py [--targets imxrt700 imx93] [--models NAME ...] [--write-docs]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

import _docs
from executorch_neutron import lower
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "peers"))
from peer_models import MODELS  # noqa: E402


def _sqnr(x: np.ndarray, ref: np.ndarray) -> float:
    noise = float(((x - ref) ** 2).sum())
    return float("inf") if noise == 0 else 10 * np.log10(float((ref ** 2).sum()) / noise)


def _output_scale(quantized) -> float | None:
    """The scale of the quantized model's last dequantize (its output's step)."""
    outs = [n for n in quantized.graph.nodes if n.op == "output"][0].args[0]
    node = outs[0] if isinstance(outs, (tuple, list)) else outs
    return float(node.args[1]) if node.op == "call_function" and "dequantize" in str(node.target) else None


def measure(name: str, target: str) -> str:
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # Vela's Python prints would land in the figures
        r = lower(model, inputs, [inputs] + calibration(inputs, 15), target=target)
    seconds = time.perf_counter() - t0
    samples = calibration(inputs, 8, seed=7)
    f, q, p = [], [], []
    with torch.no_grad():
        for x in samples:
            f.append(model(*x).numpy())
            q.append(r.quantized_model(*x).numpy())
            p.append(run(r.pte, x)[0].numpy())
    f, q, p = (np.concatenate(v).astype(np.float64) for v in (f, q, p))
    scale = _output_scale(r.quantized_model)
    steps = f"{np.abs(p - q).max() / scale:.0f}" if scale else "n/a"
    sq_pte, sq_q = _sqnr(p, f), _sqnr(q, f)
    return (f"| {name} | {target} | {len(r.report.partitions)} | {len(r.report.rejections)} | {sq_pte:.1f} | "
            f"{sq_q:.1f} | {sq_pte - sq_q:+.1f} | {steps} | {seconds:.0f} s |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["imxrt700", "imx93"])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    _docs.add_argument(parser)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    with _docs.figures(args, "benchmarks/peer_models.py", "peer_models", "Other suites' models, per target"):
        print("| model | target | partitions | CPU nodes | SQNR .pte vs float (dB) | SQNR PyTorch quantized vs float "
              "(dB) | .pte - quantized (dB) | max steps .pte vs quantized | lowering |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in args.models:
            for target in args.targets:
                print(measure(name, target), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Models as their packages build them (benchmarks/_real_models.py: the executorch wheel's MLPerf Tiny models,
Hugging Face transformers models from small configs, a YOLO-style export-mode detection head), lowered per target.

Per model and target: partitions, CPU compute nodes (by operator), the .pte run on the host against the float
model and against PyTorch's quantized model (convert_pt2e) as SQNR, the largest difference from the quantized
model in its output steps (first output), and the seconds of `lower()`. Random weights, 4 calibration samples, 4
other samples evaluated. Each row is measured in a child process: a model that fails to lower or to run, or that
takes the process down, is a row with its error line, never the end of the script. No pass/fail.

    python benchmarks/real_models.py [--models NAME ...] [--targets imxrt700 imx93] [--write-docs]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import logging
import multiprocessing
import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _docs  # noqa: E402
from _real_models import MODELS  # noqa: E402
from models.hf_blocks import varied  # noqa: E402  (on the path _real_models sets)

# benchmarks/transformers.py would shadow the transformers package the models import
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

COLUMNS = ("model", "target", "partitions", "CPU nodes (by op)", "SQNR .pte vs float (dB)",
           "SQNR quantized PyTorch vs float (dB)", "SQNR .pte vs quantized PyTorch (dB)",
           "max steps .pte vs quantized", "lowering (s)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".replace("|", "/")[:200]


def _first(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out.detach().numpy().astype(np.float64)


def _output_scale(quantized) -> float | None:
    outs = [n for n in quantized.graph.nodes if n.op == "output"][0].args[0]
    while isinstance(outs, (tuple, list)):
        outs = outs[0]
    dq = getattr(outs, "op", None) == "call_function" and "dequantize" in str(outs.target)
    return float(outs.args[1]) if dq and isinstance(outs.args[1], float) else None


def _db(value) -> str:
    return "n/a" if value is None else ("inf" if np.isinf(value) else f"{value:.1f}")


def measure(name: str, target: str) -> list[str]:
    """One row: the model lowered for `target` and its .pte run on the host (errors become the row's text)."""
    import torch

    from executorch_neutron import lower
    from executorch_neutron.numerics import sqnr
    from executorch_neutron.runtime import run

    model, inputs, calibration, samples = MODELS[name]()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # Vela's prints would land in the table
            r = lower(model, inputs, calibration, target=target)
    except Exception as exc:  # noqa: BLE001 - the row reports it
        return [name, target, "lowering failed", _first_line(exc), "", "", "", "", f"{time.perf_counter() - t0:.0f}"]
    seconds = time.perf_counter() - t0
    cpu = collections.Counter(j.op for j in r.report.rejections)
    nodes = ", ".join(f"{op.replace('aten.', '').replace('.default', '')} {n}" for op, n in sorted(cpu.items()))
    row = [name, target, str(len(r.report.partitions)), f"{sum(cpu.values())}" + (f": {nodes}" if nodes else "")]
    try:
        f, q, p = [], [], []
        with torch.no_grad():
            for x in samples:
                f.append(_first(model(*x)))
                q.append(_first(r.quantized_model(*x)))
                p.append(_first(run(r.pte, x)))
    except Exception as exc:  # noqa: BLE001
        return row + [f"host run failed: {_first_line(exc)}", "", "", "", f"{seconds:.0f}"]
    f, q, p = np.concatenate(f), np.concatenate(q), np.concatenate(p)
    if not varied(f):
        return row + ["constant float output", "", "", "", f"{seconds:.0f}"]
    scale = _output_scale(r.quantized_model)
    steps = f"{np.abs(p - q).max() / scale:.0f}" if scale else "n/a (float output)"
    return row + [_db(sqnr(f, p)), _db(sqnr(f, q)), _db(sqnr(q, p)), steps, f"{seconds:.0f}"]


def _child(conn, name: str, target: str) -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    try:
        conn.send(measure(name, target))
    except BaseException as exc:  # noqa: BLE001 - the row reports it
        conn.send([name, target, "failed", _first_line(exc), "", "", "", "", ""])
    conn.close()


def row(name: str, target: str) -> list[str]:
    """`measure` in a forked child: a crash (a signal) in a kernel, LiteRT or the converter is a row too."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, name, target))
    proc.start()
    child.close()
    result = parent.recv() if parent.poll(3600) else None
    proc.join()
    if result is None:
        code = proc.exitcode
        why = f"signal {signal.Signals(-code).name}" if code and code < 0 else f"exit code {code}"
        result = [name, target, "crashed", f"the process died ({why})", "", "", "", "", ""]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--targets", nargs="+", default=["imxrt700", "imx93"])
    _docs.add_argument(parser)
    args = parser.parse_args(argv)
    import torch  # noqa: F401 - imported once in the parent, so each forked child starts warm
    import executorch_neutron.lowering  # noqa: F401

    with _docs.figures(args, "benchmarks/real_models.py", "real_models", "Models as their packages build them"):
        print("| " + " | ".join(COLUMNS) + " |")
        print("|---|---|---:|---|---:|---:|---:|---:|---:|")
        for name in args.models:
            for target in args.targets:
                print("| " + " | ".join(row(name, target)) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

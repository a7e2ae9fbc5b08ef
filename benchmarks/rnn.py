"""Recurrent networks and normalization / shuffle layers benchmark: how much runs on the NPU, how close it computes,
before and after a change.

    .venv/bin/python benchmarks/rnn.py [--cases crnn_kws lstm ...] [--before /path/to/main/src] [--write-docs]

Cases: the CRNN keyword spotter and the LSTM autoencoder of tests/models/rnn_blocks.py on imxrt700, imxrt700cm
(Neutron + Cortex-M) and imx93 (Ethos-U); single nn.LSTM / nn.GRU layers on imxrt700; the GroupNorm,
PixelShuffle / PixelUnshuffle and F.normalize layers of tests/models/norm_shuffle_blocks.py on imxrt700. Per
case: partitions, CPU compute nodes (float or Cortex-M), max output steps of the .pte (host runtime) vs PyTorch's
quantized model, SQNR vs float of the .pte and of PyTorch's quantized model, lowering seconds. Each case is
measured in a child process importing the package from `--src` (default: this checkout), and, with `--before`,
once more from that source tree (e.g. a checkout of main), so the two columns come from the same inputs. A
failure (lowering, or the .pte refused on the host) is a figure too. Prints figures, never asserts;
`--write-docs` puts them on docs/rnn.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

#: (case, target) pairs: the models on every target kind, the layers on imxrt700
MODELS = ("crnn_kws", "lstm_autoencoder")
RNN_LAYERS = ("lstm", "gru", "lstm_2_layers_bidirectional_batch2", "gru_2_layers_bidirectional_states")
NORM_LAYERS = ("group_norm", "conv_group_norm_silu", "pixel_shuffle", "conv_pixel_shuffle", "pixel_unshuffle",
               "normalize_embedding", "normalize_channels")
CASES = ([(n, t) for n in MODELS for t in ("imxrt700", "imxrt700cm", "imx93")]
         + [(n, "imxrt700") for n in RNN_LAYERS + NORM_LAYERS])


def _factory(name: str):
    sys.path.insert(0, str(ROOT / "tests"))
    from models import norm_shuffle_blocks, rnn_blocks

    return {**rnn_blocks.MODELS, **rnn_blocks.LAYERS, **norm_shuffle_blocks.LAYERS}[name]


def measure(name: str, target: str, samples: int = 4) -> dict:
    """One case, in this process."""
    from collections import Counter

    from executorch_neutron import compare, lower
    from executorch_neutron.models.zoo import calibration

    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    model, inputs = _factory(name)()
    calib = [inputs] + calibration(inputs, 8)
    t0 = time.perf_counter()
    try:
        result = lower(model, inputs, calib, target=target)
    except Exception as exc:  # a benchmark reports a failure instead of stopping
        return {"error": f"lowering fails: {type(exc).__name__}: {str(exc).splitlines()[0][:90]}"}
    r = result.report
    row = {"partitions": len(r.partitions), "npu": r.num_delegated, "cpu": len(r.rejections), "seconds": time.perf_counter() - t0,
           "cpu_ops": dict(Counter(x.op for x in r.rejections).most_common(3))}
    try:
        out = compare(model, inputs, calib, result=result, samples=calib[1:1 + samples]).outputs[0]
    except Exception as exc:
        return {**row, "error": f"the .pte does not run: {type(exc).__name__}: {str(exc).splitlines()[0][:90]}"}
    return {**row, "steps": out.max_steps, "sqnr": out.sqnr_db, "sqnr_q": out.quantized_sqnr_db}


def _child(src: str, name: str, target: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    proc = subprocess.run([sys.executable, __file__, "--child", name, target], env=env, capture_output=True,
                          text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:100]
        return {"error": f"the measurement crashed: {tail}"}
    return json.loads(lines[-1])


def _cell(m: dict) -> list[str]:
    cpu = f"{m['cpu']}" + (f" ({', '.join(f'{op} x{n}' for op, n in m['cpu_ops'].items())})" if m.get("cpu_ops")
                           else "") if "cpu" in m else "-"
    parts = f"{m['partitions']} ({m['npu']} nodes)" if "partitions" in m else "-"
    seconds = f"{m['seconds']:.1f} s" if "seconds" in m else "-"
    if "steps" not in m:
        return [parts, cpu, m["error"], "-", seconds]
    steps = "-" if m["steps"] is None else f"{m['steps']:.0f}"
    return [parts, cpu, steps, f"{m['sqnr']:.1f} / {m['sqnr_q']:.1f} dB", seconds]


def _commit(path: Path) -> str:
    return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "unknown"


HEADER = ["case", "target", "partitions (NPU compute nodes)", "CPU compute nodes", "max steps vs quantized PyTorch",
          "SQNR vs float: ours / quantized PyTorch", "lowering"]


def main() -> None:
    import _docs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", nargs=2, metavar=("CASE", "TARGET"), help=argparse.SUPPRESS)
    p.add_argument("--cases", nargs="*", default=sorted({n for n, _ in CASES}), help="case names")
    p.add_argument("--src", default=str(ROOT / "src"), help="source tree measured as 'after'")
    p.add_argument("--before", help="source tree measured as 'before' (e.g. a checkout of main's src)")
    _docs.add_argument(p)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    trees = [("before", args.before)] * bool(args.before) + [("after", args.src)]
    with _docs.figures(args, "benchmarks/rnn.py", "rnn",
                       "Recurrent networks and normalization / shuffle layers on the NPU"):
        if args.before:
            print(f"before: {args.before} at commit `{_commit(Path(args.before))}`; after: {args.src}")
        print("| " + " | ".join(HEADER + (["when"] if args.before else [])) + " |")
        print("|" + "---|" * (len(HEADER) + bool(args.before)), flush=True)
        for name, target in CASES:
            if name not in args.cases:
                continue
            for when, src in trees:
                row = [name, target] + _cell(_child(src, name, target)) + ([when] if args.before else [])
                print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()

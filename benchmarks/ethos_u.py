"""Ethos-U back end benchmark: what Vela makes of the MLPerf Tiny examples and the model families, per config.

    .venv/bin/python benchmarks/ethos_u.py [--models cifarnet ds_cnn ...] [--configs imx93 ethos-u55-128 ...] [--write-docs]

Models: the examples (examples/cifarnet.py, ds_cnn.py, vww_mobilenet.py) and the model families of
tests/models/arch_blocks.py plus the bundled MobileNetV2-style network (random weights, batch norm warmed up,
synthetic calibration). Per model and Ethos-U config: partitions, compute nodes on the NPU, Vela's estimate
(cycles, time at the config's clock, SRAM and off-chip bytes used), lowering seconds (whole `lower()`, median of
`--repeats`) and its ratio to lowering the same model for the Neutron target imxrt700 (host-reference payloads),
the seconds of the Vela calls inside it, and the max
output steps of the .pte run on the host (each partition's reference TFLite in LiteRT) vs PyTorch's quantized
model. `ethos-u65-256` uses the same Vela config as `imx93`, so it is not listed by default. Prints figures,
never asserts.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

EXAMPLES = ("cifarnet", "ds_cnn", "vww_mobilenet")
CONFIGS = ("imx93", "ethos-u55-256", "ethos-u55-128")


def _models() -> dict:
    from models import arch_blocks

    from executorch_neutron.models import zoo
    from executorch_neutron.models.loading import load_model

    def example(name):
        return lambda: load_model(f"{ROOT}/examples/{name}.py:factory")[:2]

    return {**{n: example(n) for n in EXAMPLES}, **arch_blocks.FAMILIES, "mobilenet_v2": zoo.mobilenet_v2_like}


def _timed_lower(model, inputs, calib, target, repeats: int):
    """The last result and the median seconds of `repeats` lower() calls (after one warm-up call when repeats > 1)."""
    from _timing import median_seconds

    from executorch_neutron import lower

    results = []
    run = lambda: results.append(lower(model, inputs, calib, target=target))  # noqa: E731
    if repeats > 1:
        seconds = median_seconds(run, repeats)
    else:
        t0 = time.perf_counter()
        run()
        seconds = time.perf_counter() - t0
    return results[-1], seconds


def _host_steps(result, inputs) -> int:
    import numpy as np
    import torch

    from executorch_neutron.runtime import run

    host = run(result.pte, inputs)[0].numpy()
    with torch.no_grad():
        ref = result.quantized_model(*inputs).numpy()
    out = next(n for n in result.quantized_model.graph.nodes if n.op == "output").args[0]
    dq = (out[0] if isinstance(out, (tuple, list)) else out)
    scale, zp = float(dq.args[1]), int(dq.args[2])
    q = lambda a: np.clip(np.round(a / scale) + zp, -128, 127).astype(np.int32)  # noqa: E731
    return int(np.abs(q(host) - q(ref)).max())


def measure(name: str, factory, configs, repeats: int) -> list[str]:
    from executorch_neutron.models import zoo

    model, inputs = factory()
    calib = [inputs] + zoo.calibration(inputs, 4)
    rows = []
    try:
        _, neutron_s = _timed_lower(model, inputs, calib, "imxrt700", repeats)
    except Exception as exc:  # noqa: BLE001 - a benchmark reports a failure instead of stopping
        neutron_s = float("nan")
        print(f"<!-- {name}: imxrt700 lowering failed: {exc} -->")
    for config in configs:
        try:
            result, seconds = _timed_lower(model, inputs, calib, config, repeats)
            steps = _host_steps(result, inputs)
        except Exception as exc:  # noqa: BLE001
            rows.append(f"| {name} | {config} | fails: {type(exc).__name__}: {str(exc).splitlines()[0][:90]} "
                        f"| | | | | | |")
            continue
        r, est = result.report, result.report.estimate or {}
        cycles = est.get("cycles", 0)
        vela_s = result.timings.get("partition+convert", 0.0)  # the partitions converted and compiled by Vela
        rows.append(
            f"| {name} | {config} | {len(r.partitions)} | {r.num_delegated}/{r.num_compute} | {cycles:,} | "
            f"{1e3 * est.get('inference_seconds', 0):.3f} ms | {est.get('sram_bytes', 0) / 1024:.1f} KiB / "
            f"{est.get('off_chip_bytes', 0) / 1024:.1f} KiB | {seconds:.1f} s ({seconds / neutron_s:.2f}x), partition + "
            f"Vela {vela_s:.2f} s | "
            f"{steps} |")
    return rows


def main() -> None:
    import _docs

    models = _models()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="*", default=list(models), choices=list(models))
    p.add_argument("--repeats", type=int, default=1, help="lowerings timed per model and target (median; >1 adds "
                                                             "a warm-up call)")
    p.add_argument("--configs", nargs="*", default=list(CONFIGS),
                   choices=["imx93", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256"])
    _docs.add_argument(p)
    args = p.parse_args()
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    with _docs.figures(args, "benchmarks/ethos_u.py", "ethos_u", "Ethos-U through Vela: figures"):
        print("| model | config | partitions | nodes on NPU | Vela cycles | Vela time | SRAM / off-chip used | "
              "lowering (vs imxrt700) | host max steps |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name in args.models:
            for row in measure(name, models[name], args.configs, args.repeats):
                print(row, flush=True)


if __name__ == "__main__":
    main()

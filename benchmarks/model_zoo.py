"""Model families benchmark: how much of each architecture family runs on the NPU, and how close it computes.

    .venv/bin/python benchmarks/model_zoo.py [--families mobilenet_v3 resnext ...] [--samples 4] [--write-docs]

The families are the small models of tests/models/arch_blocks.py (defining blocks of MobileNetV3, EfficientNet,
ShuffleNetV2, ResNeXt/RegNet, ResNet, SqueezeNet; random weights, batch norm warmed up) plus the bundled
MobileNetV2-style network. Per family: partitions, CPU compute nodes, share of compute nodes and of MACs on the
NPU, max output steps of the .pte (host runtime) vs PyTorch's quantized model, SQNR vs float of the .pte and of
PyTorch's quantized model, lowering seconds. Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _families():
    from models import arch_blocks

    from executorch_neutron.models import zoo

    return {**arch_blocks.FAMILIES, "mobilenet_v2": zoo.mobilenet_v2_like}


def measure(name: str, factory, samples: int, **spec) -> dict:
    from executorch_neutron import compare, lower
    from executorch_neutron.models import zoo

    model, inputs = factory()
    calib = [inputs] + zoo.calibration(inputs, 8)
    t0 = time.perf_counter()
    try:
        result = lower(model, inputs, calib, **spec)
    except Exception as exc:  # a benchmark reports a failure instead of stopping
        return {"family": name, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"}
    seconds = time.perf_counter() - t0
    r = result.report
    cmp = compare(model, inputs, calib, result=result, samples=calib[1:1 + samples])
    out = cmp.outputs[0]
    return {"family": name, "partitions": len(r.partitions), "cpu": len(r.rejections),
            "cpu_ops": dict(Counter(x.op for x in r.rejections)), "node_share": r.node_share,
            "mac_share": r.mac_share, "steps": out.max_steps, "sqnr": out.sqnr_db, "sqnr_q": out.quantized_sqnr_db,
            "seconds": seconds}


def _row(m: dict) -> str:
    if "error" in m:
        return f"| {m['family']} | lowering fails: {m['error']} | | | | | | |"
    cpu = ", ".join(f"{op} x{n}" for op, n in sorted(m["cpu_ops"].items())) or "-"

    def f(key, fmt, scale=1):  # a figure, or "-" when there is none (no partition, no MACs)
        return "-" if m[key] is None else format(scale * m[key], fmt)

    return (f"| {m['family']} | {m['partitions']} | {m['cpu']} ({cpu}) | {f('node_share', '.0f', 100)}% | "
            f"{f('mac_share', '.1f', 100)}% | {f('steps', '.0f')} | {f('sqnr', '.1f')} / {f('sqnr_q', '.1f')} dB | "
            f"{m['seconds']:.1f} s |")


def main() -> None:
    import _docs

    families = _families()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--families", nargs="*", default=list(families), choices=list(families))
    p.add_argument("--samples", type=int, default=4, help="inputs compared per family")
    _docs.add_argument(p)
    args = p.parse_args()
    with _docs.figures(args, "benchmarks/model_zoo.py", "model_families", "Model families on the NPU"):
        print_table(families, args.families, args.samples)


def print_table(factories: dict, names, samples: int, first: str = "family", **spec) -> None:
    """Measure and print one row per name (quiet logs): the table of this script and of benchmarks/transformers.py."""
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    print(f"| {first} | partitions | CPU compute nodes | nodes on NPU | MACs on NPU | max steps vs quantized PyTorch "
          "| SQNR vs float: ours / quantized PyTorch | lowering |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        print(_row(measure(name, factories[name], samples, **spec)), flush=True)


if __name__ == "__main__":
    main()

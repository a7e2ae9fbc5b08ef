"""Lowering time of a grouped-convolution network: a regnetx_002-sized RegNetX (group width 8, 2 to 46 groups per
3x3 conv), built from tests/models/arch_blocks.py (no timm). Prints seconds per lower() stage, partitions and
graph nodes; never asserts.

    .venv/bin/python benchmarks/grouped_conv_lowering.py [--resolution 224] [--repeat 1] [--write-docs]

Grouped convs stay one node each in the ExecuTorch graph (the converter emits SPLIT + a CONV_2D per group +
CONCATENATION inside the TFLite); earlier they were split into per-group convs + cat before quantization, which
multiplied the nodes every ExecuTorch pass and export walks.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    import _docs
    from models.arch_blocks import regnetx_002

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--resolution", type=int, default=224)
    p.add_argument("--repeat", type=int, default=1)
    _docs.add_argument(p)
    args = p.parse_args()
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    model, inputs = regnetx_002(resolution=args.resolution)
    with _docs.figures(args, "benchmarks/grouped_conv_lowering.py", "grouped_conv_lowering",
                       "Lowering time of a grouped-convolution network"):
        _measure(model, inputs, args)


def _measure(model, inputs, args) -> None:
    from executorch_neutron import lower

    for _ in range(args.repeat):
        t0 = time.perf_counter()
        r = lower(model, inputs, [inputs])
        total = time.perf_counter() - t0
        nodes = sum(1 for n in r.quantized_model.graph.nodes if n.op == "call_function")
        stages = ", ".join(f"{k} {v:.1f} s" for k, v in r.timings.items())
        print(f"regnetx_002-like at {args.resolution} px: lower() {total:.1f} s ({stages}); "
              f"{len(r.report.partitions)} partition(s), {len(r.report.rejections)} CPU node(s), "
              f"{nodes} nodes in the quantized graph", flush=True)


if __name__ == "__main__":
    main()

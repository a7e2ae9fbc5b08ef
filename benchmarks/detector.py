"""A YOLOv8/YOLO11-style detector (tests/models/detector_blocks.py) lowered per target: partitions, CPU compute
nodes, the .pte against PyTorch's quantized model, and lowering time next to ExecuTorch's floor in the same run.

    .venv/bin/python benchmarks/detector.py [--targets imxrt700 imx93] [--resolution 96] [--width 0.25]

Per target: lower() (quantize, partition, convert, .pte) with its wall seconds; the CPU compute nodes by operator;
the largest difference of the .pte on the host runtime from PyTorch's quantized model over 4 samples, in output
steps; and ExecuTorch's floor: PyTorch's quantized model (the one lower() produced) through to_edge_transform_and_lower
with no partitioner + to_executorch (what any ExecuTorch flow of that model pays). Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main(argv=None) -> int:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    from executorch_neutron import lower
    from executorch_neutron.models import zoo
    from harness import pte_steps
    from models.detector_blocks import detector

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=["imxrt700", "imx93"])
    p.add_argument("--resolution", type=int, default=96)
    p.add_argument("--width", type=float, default=0.25)
    args = p.parse_args(argv)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)

    model, inputs = detector(width=args.width, resolution=args.resolution)
    calib = [inputs] + zoo.calibration(inputs, 4)
    print(f"detector width {args.width} at {args.resolution}x{args.resolution}: "
          f"{sum(p.numel() for p in model.parameters()):,} parameters")
    print("| target | partitions | NPU nodes | CPU compute nodes | max steps vs quantized PyTorch | lower() | "
          "ExecuTorch floor | lower() / floor |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for target in args.targets:
        t0 = time.perf_counter()
        result = lower(model, inputs, calib, target=target)
        seconds = time.perf_counter() - t0
        report = result.report
        cpu = Counter(r.op for r in report.rejections)
        worst = pte_steps(result, calib[1:5])
        t0 = time.perf_counter()
        to_edge_transform_and_lower(torch.export.export(result.quantized_model, inputs, strict=False)).to_executorch()
        floor = time.perf_counter() - t0
        cpu_text = ", ".join(f"{op} x{n}" for op, n in cpu.most_common()) or "none"
        print(f"| {target} | {len(report.partitions)} | {report.num_delegated} | {len(report.rejections)}: {cpu_text} | "
              f"{worst} | {seconds:.1f} s | {floor:.1f} s | {seconds / floor:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Lowering benchmark: wall seconds per stage and peak RSS for the MobileNetV2-style model (prints, never asserts).

    .venv/bin/python benchmarks/lowering.py [--resolution 64] [--calibration 8]

Stages: quantize (export for PT2E + prepare + calibrate + convert), export (of the quantized model),
partition+convert (to_edge_transform_and_lower: partitioner, TFLite conversion, payload), to_executorch.
"""

from __future__ import annotations

import argparse
import logging
import resource
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--calibration", type=int, default=8)
    args = p.parse_args()
    logging.basicConfig(level=logging.ERROR)

    t0 = time.perf_counter()
    from executorch_neutron import lower, zoo

    import_s = time.perf_counter() - t0
    model, inputs = zoo.mobilenet_v2_like(resolution=args.resolution)
    calib = zoo.calibration(inputs, args.calibration)
    t0 = time.perf_counter()
    result = lower(model, inputs, calib, target="imxrt700")
    total = time.perf_counter() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"MobileNetV2-style, 1x3x{args.resolution}x{args.resolution}, {args.calibration} calibration batches")
    print(f"  import                {import_s:7.2f} s")
    for stage, seconds in result.timings.items():
        print(f"  {stage:<21} {seconds:7.2f} s")
    print(f"  total lower()         {total:7.2f} s")
    print(f"  peak RSS              {peak_mib:7.0f} MiB")
    print(f"  .pte size             {len(result.pte) / 1024:7.1f} KiB")
    print(f"  {result.report.summary_line()}")


if __name__ == "__main__":
    main()

"""Lowering benchmark: wall seconds per stage, peak RSS, and our total against ExecuTorch's own floor (prints, never
asserts).

    .venv/bin/python benchmarks/lowering.py [--models mobilenet_v2_like ds_cnn vww_mobilenet cifarnet]
                                            [--resolution 64] [--calibration 8] [--profile N] [--write-docs]

Stages of lower(): quantize (export for PT2E + prepare + calibrate + convert), export (of the quantized model),
partition+convert (to_edge_transform_and_lower: partitioner, TFLite conversion, payload), to_executorch.

Floors, for the same model in the same process:
- float floor: the float model through plain torch.export + to_edge_transform_and_lower (no partitioner) +
  to_executorch: what any ExecuTorch user pays;
- quantized floor: PyTorch's quantized model (the one lower() produced) through the same plain flow: ExecuTorch's
  cost for the graph we hand it;
- int8 floor: PT2E quantization alone (torchao's export + prepare + calibrate + convert with NeutronQuantizer) +
  the quantized floor: what any int8 ExecuTorch flow pays, so lower() / int8 floor is what partitioning,
  conversion and the report add.
`--profile N` prints the N most expensive functions of one lower() (cProfile, cumulative).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import logging
import pstats
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _example(name: str):
    """(model, inputs) of a bundled zoo model or of examples/<name>.py's factory()."""
    from executorch_neutron.models import zoo

    if hasattr(zoo, name):
        return getattr(zoo, name)()
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "examples"))
    spec.loader.exec_module(module)
    model, inputs, *_ = module.factory()
    return model, inputs


def plain_flow(model, inputs) -> float:
    """Seconds of torch.export + to_edge_transform_and_lower (no partitioner) + to_executorch."""
    import torch
    from executorch.exir import to_edge_transform_and_lower

    t0 = time.perf_counter()
    to_edge_transform_and_lower(torch.export.export(model, inputs, strict=False)).to_executorch()
    return time.perf_counter() - t0


def bench(name: str, resolution: int, n_calib: int, profile: int) -> None:
    from executorch_neutron import NeutronQuantizer, lower, zoo
    from executorch_neutron.lowering import quantize

    if name == "mobilenet_v2_like":
        model, inputs = zoo.mobilenet_v2_like(resolution=resolution)
    else:
        model, inputs = _example(name)
    calib = zoo.calibration(inputs, n_calib)
    lower(model, inputs, calib)  # warm-up: first-call costs (imports, kernel registration) are not per model
    prof = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    result = lower(model, inputs, calib, target="imxrt700")
    if prof:
        prof.disable()
    total = time.perf_counter() - t0
    float_floor = plain_flow(model, inputs)
    quant_floor = plain_flow(result.quantized_model, inputs)
    t0 = time.perf_counter()
    quantize(model, inputs, calib, NeutronQuantizer())
    int8_floor = time.perf_counter() - t0 + quant_floor
    shape = "x".join(str(d) for d in inputs[0].shape)
    print(f"{name} ({shape}, {n_calib} calibration batches): {result.report.summary_line()}")
    for stage, seconds in result.timings.items():
        print(f"  {stage:<21} {seconds:7.2f} s")
    print(f"  total lower()         {total:7.2f} s")
    print(f"  float floor           {float_floor:7.2f} s   lower() / float floor     {total / float_floor:5.2f}x")
    print(f"  quantized floor       {quant_floor:7.2f} s   lower() / quantized floor {total / quant_floor:5.2f}x")
    print(f"  int8 floor            {int8_floor:7.2f} s   lower() / int8 floor      {total / int8_floor:5.2f}x")
    print(f"  .pte size             {len(result.pte) / 1024:7.1f} KiB")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(profile)


def main() -> None:
    import _docs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["mobilenet_v2_like", "ds_cnn", "vww_mobilenet", "cifarnet"])
    p.add_argument("--resolution", type=int, default=64, help="input size of mobilenet_v2_like")
    p.add_argument("--calibration", type=int, default=8)
    p.add_argument("--profile", type=int, default=0, metavar="N")
    _docs.add_argument(p)
    args = p.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with _docs.figures(args, "benchmarks/lowering.py", "lowering", "Lowering time and size"):
        t0 = time.perf_counter()
        import executorch_neutron  # noqa: F401

        print(f"import executorch_neutron: {time.perf_counter() - t0:.2f} s")
        for name in args.models:
            bench(name, args.resolution, args.calibration, args.profile)
        print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()

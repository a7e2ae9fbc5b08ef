"""Lowering benchmark: wall seconds per stage, peak RSS, and our total against ExecuTorch's own floor (prints, never
asserts).

    .venv/bin/python benchmarks/lowering.py [--models mobilenet_v2_like ds_cnn vww_mobilenet cifarnet yolo160 yolo320]
                                            [--resolution 64] [--calibration 8] [--repeats 1] [--profile N]
                                            [--write-docs]

Models: the bundled zoo models, examples/<name>.py's factory(), and `yolo<px>` (e.g. yolo160, yolo320): the
YOLOv8n/YOLO11n-style detector in export mode as tests/models/yolo_head_blocks.py builds it (`yolo_detector(HeadSpec(),
px)`: the package's head, Conv-BN-SiLU branches, 3 levels, a stride buffer), about 520 nodes once quantized.

Stages of lower(): quantize (export for PT2E + prepare + calibrate + convert), export (of the quantized model),
then to_edge_transform_and_lower split three ways: partition (the partitioner's ops_to_not_decompose and
partition calls), convert (the back end's preprocess: TFLite conversion, NPU compile step, payload, for every
partition) and edge (the rest: ExecuTorch's edge dialect conversion and decompositions, and its delegate
plumbing around the two). lower() reports the three as one stage (`timings["partition+convert"]`); the benchmark
wraps the partitioner's and the back end's methods during its timed run to split them. Then to_executorch; other
(what lower() does between the stages: deep copy of the model, the constant fold, the program checks, the
delegation report); the host check (one run of the .pte in a child process) apart.

Floors, for the same model in the same process:
- float floor: the float model through plain torch.export + to_edge_transform_and_lower (no partitioner) +
  to_executorch: what any ExecuTorch user pays;
- quantized floor: PyTorch's quantized model (the one lower() produced) through the same plain flow: ExecuTorch's
  cost for the graph we hand it;
- int8 floor: PT2E quantization alone (torchao's export + prepare + calibrate + convert with NeutronQuantizer) +
  the quantized floor: what any int8 ExecuTorch flow pays, so lower() / int8 floor is what partitioning,
  conversion and the report add.
`--threads N` sets torch's intra-op threads for the whole run (lower() and the floors alike): on a machine whose
cores are busy with other work, torch's default (one thread per core) makes every parallel kernel wait for a
descheduled thread, and PT2E calibration's forward passes become up to 100x slower (the floors, tracing in Python,
hardly notice). `--repeats N` times lower() and the floors N times each, alternately, and takes the median of
every figure (the machine's load then weighs on both alike). `--profile N` prints the N most expensive functions of
one lower() (cProfile, cumulative).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import importlib
import importlib.util
import logging
import os
import pstats
import re
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = ["mobilenet_v2_like", "ds_cnn", "vww_mobilenet", "cifarnet"]
YOLO = re.compile(r"yolo(\d+)$")


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


def _yolo(resolution: int):
    """(model, inputs) of the export-mode YOLO detector of tests/models/yolo_head_blocks.py at `resolution` px."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:  # the blocks import their sibling as models.detector_blocks
        sys.path.insert(0, tests)
    blocks = importlib.import_module("models.yolo_head_blocks")
    return blocks.yolo_detector(blocks.HeadSpec(), resolution)


def build(name: str, resolution: int):
    from executorch_neutron.models import zoo

    if name == "mobilenet_v2_like":
        return zoo.mobilenet_v2_like(resolution=resolution)
    if YOLO.match(name):
        return _yolo(int(YOLO.match(name).group(1)))
    return _example(name)


class _Clock:
    """Seconds spent in the partitioner's calls and in the back end's preprocess during to_edge_transform_and_lower:
    the classes' methods wrapped while the block runs (the outermost call of a nest counted once)."""

    def __init__(self):
        self.seconds = {"partition": 0.0, "convert": 0.0}
        self._depth = {"partition": 0, "convert": 0}

    def _timed(self, bucket: str, fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            self._depth[bucket] += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth[bucket] -= 1
                if not self._depth[bucket]:
                    self.seconds[bucket] += time.perf_counter() - t0
        return call

    @contextlib.contextmanager
    def running(self):
        from executorch.exir.backend.backend_details import BackendDetails

        import executorch_neutron.backends  # noqa: F401  (every back end's classes loaded)
        from executorch_neutron.partition import BasePartitioner

        patched = []

        def subclasses(cls):
            for sub in cls.__subclasses__():
                yield sub
                yield from subclasses(sub)

        for cls in [BasePartitioner, *subclasses(BasePartitioner)]:
            for method in ("partition", "ops_to_not_decompose"):
                if method in vars(cls):
                    patched.append((cls, method, vars(cls)[method]))
                    setattr(cls, method, self._timed("partition", vars(cls)[method]))
        for cls in BackendDetails.__subclasses__():
            if cls.__module__.startswith("executorch_neutron") and "preprocess" in vars(cls):
                original = vars(cls)["preprocess"]
                patched.append((cls, "preprocess", original))
                cls.preprocess = staticmethod(self._timed("convert", original.__func__))
        try:
            yield self
        finally:
            for cls, method, original in patched:
                setattr(cls, method, original)


def plain_flow(model, inputs) -> tuple[dict, int]:
    """Seconds of torch.export, to_edge_transform_and_lower (no partitioner) and to_executorch, and the number of
    nodes of the exported program."""
    import torch
    from executorch.exir import to_edge_transform_and_lower

    t0 = time.perf_counter()
    exported = torch.export.export(model, inputs, strict=False)
    t1 = time.perf_counter()
    edge = to_edge_transform_and_lower(exported)
    t2 = time.perf_counter()
    edge.to_executorch()
    t3 = time.perf_counter()
    return {"export": t1 - t0, "edge": t2 - t1, "to_executorch": t3 - t2, "total": t3 - t0}, len(exported.graph.nodes)


STAGES = ["quantize", "export", "edge", "partition", "convert", "cortex_m", "to_executorch", "other"]


def lower_once(model, inputs, calib, profile: cProfile.Profile | None):
    """One timed lower(): (result, seconds by stage incl. "host_check", "lower()" = the total less the host check)."""
    from executorch_neutron import lower

    with _Clock().running() as clock:
        if profile:
            profile.enable()
        t0 = time.perf_counter()
        result = lower(model, inputs, calib, target="imxrt700")
        total = time.perf_counter() - t0
        if profile:
            profile.disable()
    t = dict(result.timings)
    both = t.pop("partition+convert")
    stages = {"quantize": t.pop("quantize", 0.0), "export": t.pop("export"),
              "edge": both - clock.seconds["partition"] - clock.seconds["convert"], **clock.seconds}
    stages["cortex_m"] = t.pop("cortex_m", 0.0)
    stages["to_executorch"] = t.pop("to_executorch")
    host = t.pop("host_check", 0.0)
    stages["other"] = total - host - sum(stages.values())
    stages["lower()"] = total - host
    stages["host_check"] = host
    return result, stages


def bench(name: str, resolution: int, n_calib: int, repeats: int, profile: int) -> dict:
    from executorch_neutron import NeutronQuantizer, lower
    from executorch_neutron.lowering import quantize
    from executorch_neutron.models import zoo

    model, inputs = build(name, resolution)
    calib = zoo.calibration(inputs, n_calib)
    lower(model, inputs, calib)  # warm-up: first-call costs (imports, kernel registration) are not per model
    runs, floors, float_floors, int8 = [], [], [], []
    for i in range(repeats):
        prof = cProfile.Profile() if profile and i == 0 else None
        result, stages = lower_once(model, inputs, calib, prof)
        runs.append(stages)
        if prof:
            profiled = prof
        quant, q_nodes = plain_flow(result.quantized_model, inputs)
        floors.append(quant)
        flt, f_nodes = plain_flow(model, inputs)
        float_floors.append(flt["total"])
        t0 = time.perf_counter()
        quantize(model, inputs, calib, NeutronQuantizer())
        int8.append(time.perf_counter() - t0 + quant["total"])

    def med(rows, key):
        return statistics.median(r[key] for r in rows)

    stages = {k: med(runs, k) for k in runs[0]}
    floor = {k: med(floors, k) for k in floors[0]}
    float_floor, int8_floor = statistics.median(float_floors), statistics.median(int8)
    shape = "x".join(str(d) for d in inputs[0].shape)
    quant_floor = floor["total"]
    ours, with_check = stages["lower()"], stages["lower()"] + stages["host_check"]
    print(f"{name} ({shape}, {n_calib} calibration batches, median of {repeats}): {result.report.summary_line()}")
    print(f"  {f_nodes} nodes exported float, {q_nodes} exported quantized (the program lower() and the quantized "
          f"floor hand to ExecuTorch); .pte {len(result.pte) / 1024:.1f} KiB")
    print(f"  lower() {ours:.2f} s (+ host check {stages['host_check']:.2f} s), quantized floor {quant_floor:.2f} s: "
          f"{ours / quant_floor:.2f}x ({with_check / quant_floor:.2f}x with the host check, "
          f"{(ours - stages['quantize']) / quant_floor:.2f}x less quantize); int8 floor {int8_floor:.2f} s: "
          f"{ours / int8_floor:.2f}x; float floor {float_floor:.2f} s: {ours / float_floor:.2f}x")
    if profile:
        pstats.Stats(profiled).sort_stats("cumulative").print_stats(profile)
    return {"name": name, "shape": shape, "nodes": q_nodes, "float_nodes": f_nodes, "stages": stages,
            "floor": floor, "float_floor": float_floor, "int8_floor": int8_floor}


def table(rows: list[dict]) -> None:
    """The per-stage table of every model measured, one column each."""
    print("| seconds | " + " | ".join(f"{r['name']} ({r['shape']})" for r in rows) + " |")
    print("|---|" + "---:|" * len(rows))

    def line(label, cells):
        print(f"| {label} | " + " | ".join(cells) + " |")

    line("nodes (exported float / quantized)", [f"{r['float_nodes']} / {r['nodes']}" for r in rows])
    for stage in STAGES:
        if stage == "cortex_m" and not any(r["stages"][stage] for r in rows):
            continue
        line(stage, [f"{r['stages'][stage]:.2f}" for r in rows])
    line("**lower()** (without the host check)", [f"**{r['stages']['lower()']:.2f}**" for r in rows])
    line("host check", [f"{r['stages']['host_check']:.2f}" for r in rows])
    line("quantized floor: export", [f"{r['floor']['export']:.2f}" for r in rows])
    line("quantized floor: to_edge_transform_and_lower", [f"{r['floor']['edge']:.2f}" for r in rows])
    line("quantized floor: to_executorch", [f"{r['floor']['to_executorch']:.2f}" for r in rows])
    line("**quantized floor**", [f"**{r['floor']['total']:.2f}**" for r in rows])
    line("**lower() / quantized floor**", [f"**{r['stages']['lower()'] / r['floor']['total']:.2f}x**" for r in rows])
    line("with the host check / quantized floor",
         [f"{(r['stages']['lower()'] + r['stages']['host_check']) / r['floor']['total']:.2f}x" for r in rows])
    line("lower() less quantize / quantized floor",
         [f"{(r['stages']['lower()'] - r['stages']['quantize']) / r['floor']['total']:.2f}x" for r in rows])
    line("int8 floor (PT2E + quantized floor)", [f"{r['int8_floor']:.2f}" for r in rows])
    line("lower() / int8 floor", [f"{r['stages']['lower()'] / r['int8_floor']:.2f}x" for r in rows])
    line("float floor", [f"{r['float_floor']:.2f}" for r in rows])


def main() -> None:
    import _docs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=DEFAULT_MODELS,
                   help="zoo or example names, or yolo<px> (yolo160, yolo320): the export-mode YOLO detector")
    p.add_argument("--resolution", type=int, default=64, help="input size of mobilenet_v2_like")
    p.add_argument("--calibration", type=int, default=8)
    p.add_argument("--repeats", type=int, default=1, help="timed lowerings and floors per model (median)")
    p.add_argument("--profile", type=int, default=0, metavar="N")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch intra-op threads for the whole run (default: torch's own choice)")
    _docs.add_argument(p)
    args = p.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with _docs.figures(args, "benchmarks/lowering.py", "lowering", "Lowering time and size"):
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start; torch intra-op threads "
              f"{torch.get_num_threads()}")
        t0 = time.perf_counter()
        import executorch_neutron  # noqa: F401

        print(f"import executorch_neutron: {time.perf_counter() - t0:.2f} s")
        rows = [bench(name, args.resolution, args.calibration, args.repeats, args.profile) for name in args.models]
        print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; load average "
              f"{os.getloadavg()[0]:.1f} at the end")
        print()
        table(rows)


if __name__ == "__main__":
    main()

"""The Neutron estimate (neutron/estimate.py) against NXP's published latencies, its fit and its expected error.

    .venv/bin/python benchmarks/neutron_estimate.py [--targets imxrt700 mcxn94x imx95] [--layers 5] [--write-docs]

1. The published models as their sources define them (zoo.nxp_cifarnet: ExecuTorch's examples/nxp CifarNet;
   zoo.ds_cnn_s: MLPerf Tiny's DS-CNN-S; zoo.mobilenet_v1_025_128; random weights, synthetic calibration) lowered
   for imxrt700, against NXP's published i.MX RT700 latencies (docs/guide/sources.md; 324 MHz): CifarNet 848 us (ExecuTorch
   .pte), DS-CNN-S 576-595 us (its midpoint, 585.5 us), MobileNetV1 0.25 128x128 2,759 us (TFLite Micro). The
   boards' runs take int8 inputs, so the compared figure is the NPU's time plus the CPU operators' (none here),
   without the float -> int8 conversion at the .pte's inputs that the report's total includes.
2. The fit: the estimate's two free figures per Neutron generation (`depthwise_macs_per_pipe`, `layer_cycles`)
   by least squares on log(published / estimate) over the three figures (Nelder-Mead on their logs), and the
   leave-one-out error (each model predicted by a fit on the other two): the expected error the report quotes
   (`estimate.EXPECTED_ERROR`). target.py's figures are checked against the fit.
3. The same estimate for `mcxn94x` (N1-16, 150 MHz) against NXP's anomaly-detection figure (0.797 ms, zoo.
   anomaly_autoencoder), and the bundled examples per target with their dominant layers.
Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

#: NXP's published i.MX RT700 latencies (seconds) and where they come from
PUBLISHED = {
    "nxp_cifarnet": (848e-6, "CifarNet, ExecuTorch .pte (executorch_modelrunner)"),
    "ds_cnn_s": (585.5e-6, "DS-CNN-S, TFLite Micro (tflm_kws: 576-595 us)"),
    "mobilenet_v1_025_128": (2759e-6, "MobileNetV1 0.25 128x128, TFLite Micro (tflm_label_image)"),
}
PUBLISHED_AD_SECONDS = 0.797e-3  # NXP: MLPerf Tiny anomaly detection on the MCX N94x NPU
EXAMPLES = ("cifarnet", "ds_cnn", "vww_mobilenet", "anomaly_autoencoder")
TARGETS = ("imxrt700", "mcxn94x", "imx95")
_IO = ("quantize_per_tensor", "dequantize_per_tensor")


def _lower(name: str, target: str):
    from executorch_neutron import lower, zoo
    from executorch_neutron.models.loading import load_model

    model, inputs = zoo.MODELS[name]() if name in zoo.MODELS else load_model(f"{ROOT}/examples/{name}.py:factory")[:2]
    return lower(model, inputs, [inputs] + zoo.calibration(inputs, 4), target=target).report


def _measured_part(report, target) -> float:
    """Seconds the boards measured: the NPU's partitions at `target`'s figures plus the CPU operators other than the
    .pte's I/O conversions (the published runs take int8 inputs)."""
    from executorch_neutron.core.cpu_estimate import cpu_estimate
    from executorch_neutron.neutron import estimate

    npu = sum(estimate.estimate_tflite(p.tflite, target).cycles for p in report.partitions) / target.npu_clock_hz
    work = [w for w in report.cpu_work if w[0] not in _IO]
    return npu + cpu_estimate(work, target)["cpu_seconds"]


def _fit(reports: dict, base) -> tuple[float, float]:
    """(depthwise MACs per pipe, cycles per kernel) minimising the sum of squared log(published / estimate)."""
    from scipy.optimize import minimize

    def loss(p):
        t = dataclasses.replace(base, depthwise_macs_per_pipe=math.exp(p[0]), layer_cycles=math.exp(p[1]))
        return sum(math.log(PUBLISHED[n][0] / _measured_part(r, t)) ** 2 for n, r in reports.items())

    best = minimize(loss, [math.log(0.3), math.log(500)], method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-12})
    return math.exp(best.x[0]), math.exp(best.x[1])


def published(layers: int) -> None:
    from executorch_neutron.neutron import estimate
    from executorch_neutron.target import get_target

    base = get_target("imxrt700")
    reports = {name: _lower(name, "imxrt700") for name in PUBLISHED}
    dw, fixed = _fit(reports, base)
    print(f"Fit on the three published figures: depthwise {dw:.3f} MACs per pipe and cycle "
          f"({dw * base.num_pipes:.2f} MACs/cycle on imxrt700's {base.num_pipes} pipes), {fixed:.0f} cycles per "
          f"kernel; target.py has {base.depthwise_macs_per_pipe:.3f} and {base.layer_cycles:.0f}"
          + ("" if abs(dw / base.depthwise_macs_per_pipe - 1) < 0.01 and abs(fixed / base.layer_cycles - 1) < 0.01
             else " (differs: update target.py's N3_* figures)"))
    print("")
    print("| model (i.MX RT700, 324 MHz) | published | estimate (NPU + CPU operators) | published / estimate | "
          "leave-one-out estimate | published / leave-one-out | report total (+ float I/O conversion on the M33) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for name, report in reports.items():
        seconds, what = PUBLISHED[name]
        ours = _measured_part(report, base)
        dw_o, fixed_o = _fit({n: r for n, r in reports.items() if n != name}, base)
        loo = _measured_part(report, dataclasses.replace(base, depthwise_macs_per_pipe=dw_o, layer_cycles=fixed_o))
        worst = max(worst, abs(seconds / loo - 1))
        total = report.estimate["inference_seconds"]
        print(f"| {what} | {1e6 * seconds:,.0f} us | {1e6 * ours:,.0f} us | {seconds / ours:.2f} | {1e6 * loo:,.0f} us | "
              f"{seconds / loo:.2f} | {1e6 * total:,.0f} us |", flush=True)
    print("")
    print(f"Expected error (the largest leave-one-out |published / estimate - 1|): {100 * worst:.0f}%; "
          f"estimate.EXPECTED_ERROR = {100 * estimate.EXPECTED_ERROR:.0f}%")
    for name, report in reports.items():
        _dominant(name, "imxrt700", report, layers)


def _dominant(name: str, target: str, report, layers: int) -> None:
    est = report.estimate
    rows = sorted((la for p in report.partitions for la in p.estimate["layers"]), key=lambda la: -la["cycles"])
    print("")
    print(f"{name} on {target}, the {layers} layers with the most cycles:")
    print("")
    print("| layer (output tensor) | operator | kind | cycles | share | MACs | bound by |")
    print("|---|---|---|---:|---:|---:|---|")
    for la in rows[:layers]:
        print(f"| `{la['name']}` | {la['op']} | {la['kind']} | {la['cycles']:,} | "
              f"{100 * la['cycles'] / max(est['cycles'], 1):.1f}% | {la['macs']:,} | {la['bound']} |")


def main(argv=None) -> int:
    import _docs
    from executorch_neutron.report.render import estimate_figures

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=list(TARGETS))
    p.add_argument("--layers", type=int, default=5, help="layers listed per model (most cycles first)")
    _docs.add_argument(p)
    args = p.parse_args(argv)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)

    figures, ad = {}, None
    with _docs.figures(args, "benchmarks/neutron_estimate.py", "neutron_estimate", "Neutron per-layer estimate"):
        published(args.layers)
        print("")
        print("| example | target | partitions | MACs | NPU cycles | NPU time | CPU time | total | "
              "data-bound share of the NPU cycles |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in EXAMPLES:
            for target in args.targets:
                report = _lower(name, target)
                figures[target] = estimate_figures(report)
                est = report.estimate
                layers = [la for p in report.partitions for la in p.estimate["layers"]]
                data = sum(la["cycles"] for la in layers if la["bound"] == "data")
                print(f"| {name} | {target} | {len(report.partitions)} | {est['macs']:,} | {est['cycles']:,} | "
                      f"{1e3 * est['npu_seconds']:.3f} ms | {1e3 * est['cpu_seconds']:.3f} ms | "
                      f"{1e3 * est['inference_seconds']:.3f} ms | {100 * data / max(est['cycles'], 1):.0f}% |", flush=True)
                if name == "anomaly_autoencoder" and target == "mcxn94x":
                    ad = est["npu_seconds"]
        print("")
        for target, lines in figures.items():
            print(f"{target}: " + "; ".join(lines))
        if ad is not None:
            print(f"MLPerf Tiny anomaly-detection autoencoder on mcxn94x: NPU estimate {1e3 * ad:.3f} ms, NXP's "
                  f"published NPU time {1e3 * PUBLISHED_AD_SECONDS:.3f} ms: published / estimate = "
                  f"{PUBLISHED_AD_SECONDS / ad:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

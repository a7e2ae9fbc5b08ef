"""The Neutron estimate (neutron/estimate.py) against NXP's published latencies, its fit and its expected error.

    .venv/bin/python benchmarks/neutron_estimate.py [--targets imxrt700 mcxn94x imx95] [--layers 5] [--write-docs]

1. Per Neutron generation with published figures (`estimate.CALIBRATIONS`, docs/guide/sources.md), the published
   models lowered for a target of that generation, against NXP's latencies:
   - N3, i.MX RT700 (`imxrt700`, 324 MHz): the models as their sources define them (zoo.nxp_cifarnet: ExecuTorch's
     examples/nxp CifarNet; zoo.ds_cnn_s: MLPerf Tiny's DS-CNN-S; zoo.mobilenet_v1_025_128; random weights,
     synthetic calibration): CifarNet 848 us (ExecuTorch .pte), DS-CNN-S 576-595 us (its midpoint, 585.5 us),
     MobileNetV1 0.25 128x128 2,759 us (TFLite Micro);
   - N1, MCX N947 (`mcxn94x`, 150 MHz, lowered with int8 inputs and outputs as the published runs): the MLPerf Tiny
     models the executorch wheel ships (`executorch.examples.models.mlperf_tiny`, as benchmarks/_real_models.py
     builds them): DS-CNN 3.329 ms, MobileNetV1 0.25 96x96 6.384 ms, ResNet-8 6.310 ms, the anomaly-detection
     autoencoder 0.797 ms (NXP's eIQ model zoo, TFLite Micro).
   The boards' runs take int8 inputs, so the compared figure is the NPU's time plus the CPU operators' (none here),
   without the float -> int8 conversion at a float .pte's inputs that the report's total includes.
2. The fit, per generation: the estimate's two free figures (`depthwise_macs_per_unit`, `layer_cycles`) by least
   squares on log(published / estimate) over that generation's figures (Nelder-Mead on their logs), and the
   leave-one-out error (each model predicted by a fit on the others of its generation): the expected error the
   report states for the NPU part on that generation's targets (`Calibration.expected_error`). target.py's fitted
   figures and the stated errors are checked against the fit. For N1, the largest leave-one-out error at other
   weight rates than the one derived from the flash's wait states (4 B/cycle).
3. The bundled examples per target, and each target's figures with their sources.
Prints figures, never asserts. The estimate needs no host run: lower()'s host check is off.
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

#: the target each generation's published models are lowered for, and whether with int8 inputs and outputs
GENERATION_TARGETS = {"N3": ("imxrt700", False), "N1": ("mcxn94x", True)}
EXAMPLES = ("cifarnet", "ds_cnn", "vww_mobilenet", "anomaly_autoencoder")
TARGETS = ("imxrt700", "mcxn94x", "imx95")
FITTED = ("depthwise_macs_per_unit", "layer_cycles")
N1_WEIGHT_RATES = (2, 3, 4, 5, 6, 8)  # B/cycle from flash tried beside the derived one
_IO = ("quantize_per_tensor", "dequantize_per_tensor")


def _model(key: str):
    """(model, example inputs, calibration samples) of a published model's key (`Calibration.published`) or a bundled
    example's name."""
    from executorch_neutron.models import zoo
    from executorch_neutron.models.loading import load_model

    if key.startswith("mlperf_tiny."):
        import _real_models

        model, inputs, calibration, _ = _real_models.MODELS[key]()
        return model, inputs, calibration
    name = key.removeprefix("zoo.")
    model, inputs = zoo.MODELS[name]() if name in zoo.MODELS else load_model(f"{ROOT}/examples/{name}.py:factory")[:2]
    return model, inputs, [inputs] + zoo.calibration(inputs, 4)


def _lower(key: str, target: str, quantized_io: bool = False):
    from executorch_neutron import lower

    model, inputs, calibration = _model(key)
    return lower(model, inputs, calibration, target=target, quantized_io=quantized_io, host_check=False).report


def _measured_part(report, target) -> float:
    """Seconds the boards measured: the NPU's partitions at `target`'s figures plus the CPU operators other than the
    .pte's I/O conversions (the published runs take int8 inputs)."""
    from executorch_neutron.core.cpu_estimate import cpu_estimate
    from executorch_neutron.neutron import estimate

    npu = sum(estimate.estimate_tflite(p.tflite, target).cycles for p in report.partitions) / target.npu_clock_hz
    work = [w for w in report.cpu_work if w[0] not in _IO]
    return npu + cpu_estimate(work, target)["cpu_seconds"]


def _with(base, fitted: tuple[float, float]):
    return dataclasses.replace(base, **dict(zip(FITTED, fitted)))


def _fit(reports: dict, published: dict, base) -> tuple[float, float]:
    """(depthwise MACs per unit and cycle, cycles per kernel) minimising the sum of squared log(published /
    estimate) over `reports`."""
    from scipy.optimize import minimize

    def loss(p):
        t = _with(base, (math.exp(p[0]), math.exp(p[1])))
        return sum(math.log(published[k] / _measured_part(r, t)) ** 2 for k, r in reports.items())

    start = [math.log(2.0), math.log(1000.0)]  # the same start on every generation: the fit does not read target.py
    best = minimize(loss, start, method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-12})
    return math.exp(best.x[0]), math.exp(best.x[1])


def generation(gen: str, layers: int) -> None:
    from executorch_neutron.neutron import estimate
    from executorch_neutron.target import get_target

    cal = estimate.CALIBRATIONS[gen]
    name, quantized_io = GENERATION_TARGETS[gen]
    base = get_target(name)
    published = {key: seconds for key, _, seconds, _ in cal.published}
    reports = {key: _lower(key, name, quantized_io) for key in published}
    fitted = _fit(reports, published, base)
    dw, fixed = fitted
    stored = tuple(getattr(base, f) for f in FITTED)
    # the loss is flat along some directions (on N3 the cost per kernel moves by tens of cycles for a change in the
    # fifth digit): target.py's figures agree with the fit when they give the same estimates
    apart = max(abs(_measured_part(r, base) / _measured_part(r, _with(base, fitted)) - 1) for r in reports.values())
    print(f"{gen} ({cal.chip}, target {name}): fit on its {len(published)} published figures: depthwise {dw:.3f} MACs "
          f"per cycle and unit, {fixed:.0f} cycles per kernel; target.py has {stored[0]:.3f} and {stored[1]:.0f}, "
          f"whose estimates are within {100 * apart:.1f}% of the fit's"
          + ("" if apart < 0.005 else f" (differs: update target.py's {gen}_* figures)"))
    print("")
    print(f"| model ({cal.chip}) | published | estimate (NPU + CPU operators) | published / estimate | "
          "leave-one-out estimate | published / leave-one-out | report total (+ float I/O conversion on the CPU) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    loo = _leave_one_out(reports, published, base)
    for key, what, seconds, shown in cal.published:
        report = reports[key]
        ours = _measured_part(report, _with(base, fitted))
        total = report.estimate["inference_seconds"]
        print(f"| {what} (`{key}`) | {shown} | {1e6 * ours:,.0f} us | {seconds / ours:.2f} | {1e6 * loo[key]:,.0f} us | "
              f"{seconds / loo[key]:.2f} | {1e6 * total:,.0f} us |", flush=True)
    worst = max(abs(published[k] / loo[k] - 1) for k in loo)
    print("")
    stated = math.ceil(round(100 * worst, 6)) / 100
    print(f"{gen} expected error (the largest leave-one-out |published / estimate - 1|): {100 * worst:.1f}%, "
          f"+-{100 * stated:.0f}% rounded up; estimate.CALIBRATIONS[{gen!r}].expected_error = "
          f"{100 * cal.expected_error:.0f}%" + ("" if abs(stated - cal.expected_error) < 1e-9 else " (differs: update it)"))
    if gen == "N1":
        print("")
        print(f"{gen} at other flash rates than the derived 4 B/cycle: the largest leave-one-out error (the two figures "
              "refitted) per weight rate: " + "; ".join(
                  f"{rate} B/cycle {100 * _worst(reports, published, dataclasses.replace(base, weight_bytes_per_cycle=rate)):.0f}%"
                  for rate in N1_WEIGHT_RATES))
    for key, report in reports.items():
        _dominant(key, name, report, layers)


def _leave_one_out(reports: dict, published: dict, base) -> dict:
    """Each model's estimate (seconds) by a fit on the others."""
    return {key: _measured_part(report, _with(base, _fit({k: r for k, r in reports.items() if k != key}, published, base)))
            for key, report in reports.items()}


def _worst(reports: dict, published: dict, base) -> float:
    """The largest leave-one-out |published / estimate - 1| at `base`'s figures."""
    return max(abs(published[k] / s - 1) for k, s in _leave_one_out(reports, published, base).items())


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
    from executorch_neutron.neutron import estimate
    from executorch_neutron.target import get_target

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=list(TARGETS))
    p.add_argument("--layers", type=int, default=5, help="layers listed per model (most cycles first)")
    _docs.add_argument(p)
    args = p.parse_args(argv)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)

    with _docs.figures(args, "benchmarks/neutron_estimate.py", "neutron_estimate", "Neutron per-layer estimate"):
        for gen in estimate.CALIBRATIONS:
            generation(gen, args.layers)
            print("")
        print("| example | target | partitions | MACs | NPU cycles | NPU time | CPU time | total | "
              "data-bound share of the NPU cycles |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in EXAMPLES:
            for target in args.targets:
                report = _lower(name, target)
                est = report.estimate
                layers = [la for p in report.partitions for la in p.estimate["layers"]]
                data = sum(la["cycles"] for la in layers if la["bound"] == "data")
                print(f"| {name} | {target} | {len(report.partitions)} | {est['macs']:,} | {est['cycles']:,} | "
                      f"{1e3 * est['npu_seconds']:.3f} ms | {1e3 * est['cpu_seconds']:.3f} ms | "
                      f"{1e3 * est['inference_seconds']:.3f} ms | {100 * data / max(est['cycles'], 1):.0f}% |", flush=True)
        print("")
        for target in args.targets:
            t = get_target(target)
            cal = estimate.calibration(t)
            error = (f"expected error of the NPU part +-{100 * cal.expected_error:.0f}% ({t.generation} fit)" if cal
                     else f"no measured figure for its generation ({t.generation}): no expected error")
            print(f"{target} ({error}): " + "; ".join(t.estimate_figures()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

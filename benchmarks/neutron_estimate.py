"""The Neutron per-layer estimate (neutron/estimate.py) of the bundled examples, and how it holds against NXP's
published figure.

    .venv/bin/python benchmarks/neutron_estimate.py [--targets imxrt700 mcxn94x imx95] [--layers 5]

Per example (examples/cifarnet.py, ds_cnn.py, vww_mobilenet.py and zoo.anomaly_autoencoder; random weights,
synthetic calibration) and Neutron target: the estimate's cycles and time, the share of its cycles bound by data
movement, and the layers with the most cycles. Then the one published Neutron measurement we can rebuild: MLPerf
Tiny's anomaly-detection autoencoder, 0.797 ms on the MCX N94x NPU (NXP), against the estimate for `mcxn94x`
(the ratio report/notes.py quotes). `--write-docs` puts the figures on docs/neutron_estimate.md. Prints figures,
never asserts.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

EXAMPLES = ("cifarnet", "ds_cnn", "vww_mobilenet", "anomaly_autoencoder")
TARGETS = ("imxrt700", "mcxn94x", "imx95")
PUBLISHED_AD_SECONDS = 0.797e-3  # NXP: MLPerf Tiny anomaly detection on the MCX N94x NPU


def _lower(name: str, target: str):
    from executorch_neutron import lower, zoo
    from executorch_neutron.loading import load_model

    model, inputs = zoo.MODELS[name]() if name in zoo.MODELS else load_model(f"{ROOT}/examples/{name}.py:factory")[:2]
    return lower(model, inputs, [inputs] + zoo.calibration(inputs, 4), target=target).report


def main(argv=None) -> int:
    import _docs
    from executorch_neutron.report.render import estimate_figures

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=list(TARGETS))
    p.add_argument("--layers", type=int, default=5, help="layers listed per example (most cycles first)")
    _docs.add_argument(p)
    args = p.parse_args(argv)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)

    details, figures, ad = [], {}, None
    with _docs.figures(args, "benchmarks/neutron_estimate.py", "neutron_estimate", "Neutron per-layer estimate"):
        print("| example | target | partitions | MACs | cycles | time | data-bound share of the cycles |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for name in EXAMPLES:
            for target in args.targets:
                report = _lower(name, target)
                figures[target] = estimate_figures(report)
                est = report.neutron_estimate
                layers = [la for p in report.partitions for la in p.neutron_estimate["layers"]]
                data = sum(la["cycles"] for la in layers if la["bound"] == "data")
                print(f"| {name} | {target} | {len(report.partitions)} | {est['macs']:,} | {est['cycles']:,} | "
                      f"{1e3 * est['inference_seconds']:.3f} ms | {100 * data / max(est['cycles'], 1):.0f}% |",
                      flush=True)
                if target == args.targets[0]:
                    details += ["", f"{name} on {target}, the {args.layers} layers with the most cycles:", "",
                                "| layer (output tensor) | operator | cycles | share | MACs | bound by |",
                                "|---|---|---:|---:|---:|---|"]
                    details += [f"| `{la['name']}` | {la['op']} | {la['cycles']:,} | "
                                f"{100 * la['cycles'] / max(est['cycles'], 1):.1f}% | {la['macs']:,} | {la['bound']} |"
                                for la in sorted(layers, key=lambda la: -la["cycles"])[:args.layers]]
                if name == "anomaly_autoencoder" and target == "mcxn94x":
                    ad = est["inference_seconds"]
        print("\n".join(details))
        print("")
        for target, lines in figures.items():
            print(f"{target}: " + "; ".join(lines))
        if ad is not None:
            print(f"MLPerf Tiny anomaly-detection autoencoder on mcxn94x: estimate {1e3 * ad:.3f} ms, NXP's "
                  f"published NPU time {1e3 * PUBLISHED_AD_SECONDS:.3f} ms: measured / estimate = "
                  f"{PUBLISHED_AD_SECONDS / ad:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

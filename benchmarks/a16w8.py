"""Vela's cycle estimate of a bundled example quantized int8 and A16W8 (int16 activations, int8 weights), per
Ethos-U target: what int16 costs on the NPU.

    PYTHONPATH=src .venv/bin/python benchmarks/a16w8.py [--model cifarnet] [--targets ethos-u55-128 imx93]
"""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

from executorch_neutron import lower
from executorch_neutron.models.loading import load_model
from executorch_neutron.models.zoo import calibration
from executorch_neutron.quantizer import NeutronQuantizer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="cifarnet", help="an example under examples/ (default cifarnet)")
    parser.add_argument("--targets", nargs="+", default=["ethos-u55-128", "imx93"])
    args = parser.parse_args()
    model, inputs, _ = load_model(f"{EXAMPLES}/{args.model}.py:factory")
    for target in args.targets:
        cycles = {}
        for precision in ("int8", "int16"):
            with contextlib.redirect_stdout(io.StringIO()):  # Vela's console
                result = lower(model, inputs, [inputs] + calibration(inputs, 4), target=target,
                               quantizer=NeutronQuantizer(target, activations=precision))
            cycles[precision] = result.report.estimate["cycles"]
            cpu = len(result.report.rejections)
            print(f"{args.model:10s} {target:14s} {precision:5s} {cycles[precision]:>10,} cycles  "
                  f"({cpu} operators on the CPU)")
        print(f"{args.model:10s} {target:14s} int16 / int8: {cycles['int16'] / cycles['int8']:.2f}x")


if __name__ == "__main__":
    main()

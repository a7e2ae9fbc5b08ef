"""Shared driver of the example scripts: lower a model, print its delegation report, run the .pte on the host.

`run_example(name, factory)` lowers for the target given on the command line (default imxrt700), writes
out/examples/<name>.pte and <name>.html (the report), runs the .pte on the host and compares the result with
PyTorch's quantized model. Calibration uses synthetic data (the examples ship no data sets): the figures show that
the flow works, not the accuracy of a trained network.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import torch
from tqdm import tqdm

from executorch_neutron import lower
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration


def run_example(name: str, factory, calibration_samples: int = 8) -> int:
    p = argparse.ArgumentParser(description=f"lower the {name} example and run it on the host")
    p.add_argument("--target", default="imxrt700")
    p.add_argument("--out", type=Path, default=Path("out/examples"))
    args = p.parse_args()

    model, inputs = factory()
    calib = [inputs] + calibration(inputs, calibration_samples)  # synthetic: see the module docstring
    bars = functools.partial(tqdm, leave=False, disable=not sys.stderr.isatty())  # bars on a terminal only
    result = lower(model, inputs, calib, target=args.target, progress=bars)
    pte = result.save(args.out / f"{name}.pte")
    html = result.report.save(args.out / f"{name}.html")
    print(result.report)
    outputs = run(result.pte, inputs)
    with torch.no_grad():
        reference = result.quantized_model(*inputs)
    diff = (outputs[0] - reference).abs().max().item()
    print(f"\nwrote {pte} ({len(result.pte)} bytes) and {html}")
    print(f"host run: output {tuple(outputs[0].shape)}, top-1 {int(outputs[0].argmax())} (quantized PyTorch: "
          f"{int(reference.argmax())}), max |difference| {diff:.5f}")
    return 0

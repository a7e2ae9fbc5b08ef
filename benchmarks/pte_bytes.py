"""SHA-256 of the .pte of each bundled example for a set of targets: the check that a refactor keeps payload bytes.

    PYTHONPATH=src .venv/bin/python benchmarks/pte_bytes.py [--targets imxrt700 imxrt700cm imx93]

Run it before and after a change and diff the output: every line must be the same.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
from pathlib import Path

from executorch_neutron import lower
from executorch_neutron.models.zoo import calibration

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _factory(name: str):
    sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.factory


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=["imxrt700", "imxrt700cm", "imx93"])
    p.add_argument("--examples", nargs="+", default=["cifarnet", "ds_cnn", "vww_mobilenet"])
    args = p.parse_args()
    for name in args.examples:
        model, inputs = _factory(name)()
        calib = [inputs] + calibration(inputs, 8)
        for target in args.targets:
            pte = lower(model, inputs, calib, target=target).pte
            print(f"{name:14s} {target:12s} {len(pte):8d} bytes  sha256 {hashlib.sha256(pte).hexdigest()}", flush=True)


if __name__ == "__main__":
    main()

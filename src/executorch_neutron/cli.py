"""Command line: `executorch-neutron <command>` (also `python -m executorch_neutron`). argparse -> public API."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path



def _demo(args) -> int:
    import torch

    from . import lower, zoo
    from .runtime import run

    model, inputs = zoo.MODELS[args.model]()
    calib = zoo.calibration(inputs, 16)
    print(f"Lowering the bundled {args.model} for {args.target} ...")
    result = lower(model, inputs, calib, target=args.target)
    path = result.save(args.output)
    print(result.report)
    print(f"\nwrote {path} ({len(result.pte)} bytes); stage seconds: "
          + ", ".join(f"{k} {v:.2f}" for k, v in result.timings.items()))
    outputs = run(result.pte, inputs)
    with torch.no_grad():
        reference = result.quantized_model(*inputs)
    diff = (outputs[0] - reference).abs().max().item()
    print(f"host run of the .pte: output {tuple(outputs[0].shape)}, top-1 {int(outputs[0].argmax())} "
          f"(quantized PyTorch: {int(reference.argmax())}), max |difference| {diff:.5f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .target import TARGETS
    from .zoo import MODELS

    p = argparse.ArgumentParser(prog="executorch-neutron", description="ExecuTorch backend for NXP eIQ Neutron NPUs")
    p.add_argument("--verbose", action="store_true", help="show tracebacks and debug logs")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="lower a bundled example model, run the .pte on the host, print the report")
    d.add_argument("--model", choices=sorted(MODELS), default="cifarnet")
    d.add_argument("--target", choices=sorted(TARGETS), default="imxrt700")
    d.add_argument("-o", "--output", type=Path, default=Path("out/demo.pte"))
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(message)s")
    logging.getLogger("torchao").setLevel(logging.ERROR)
    try:
        return args.func(args)
    except Exception as exc:  # one line for users, the traceback with --verbose
        if args.verbose:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 1



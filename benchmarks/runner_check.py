"""Would the bundled examples load on NXP's executorch_modelrunner firmware today? Lowers examples/cifarnet.py,
ds_cnn.py and vww_mobilenet.py (random calibration, as `compile ... --random-calibration`) for each target and
checks every .pte against a runner's kernel table and model buffer (`executorch_neutron.board.runners`): prints,
per model and target, the .pte size, its CPU operators and the ones the firmware lacks (LOAD_MODEL error 0x14).

    python benchmarks/runner_check.py [--runner modelrunner|FILE] [--targets imxrt700 imxrt700cm]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from executorch_neutron import lower
from executorch_neutron.board.runners import check_pte, load_runner, too_big
from executorch_neutron.loading import load_model, random_samples
from executorch_neutron.pte import inspect_pte

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("cifarnet", "ds_cnn", "vww_mobilenet")


def check(example: str, target: str, runner) -> str:
    model, inputs, _ = load_model(f"{ROOT / 'examples' / example}.py:factory")
    pte = lower(model, inputs, [inputs] + random_samples(inputs, 8), target=target).pte
    kernels = inspect_pte(pte).methods[0].cpu_kernels
    missing = check_pte(pte, runner)
    size = too_big(len(pte), runner)
    verdict = ("loads" if not missing and not size else "fails LOAD_MODEL: "
               + "; ".join([f"{f.operator} x{f.calls} missing (0x14)" for f in missing] + ([size + " (0x03)"] if size
                                                                                        else [])))
    return (f"{example:14s} {target:11s} {len(pte):>9,} B  CPU ops: {', '.join(sorted(kernels)) or 'none'}\n"
            f"{'':27s}-> {verdict}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runner", default="modelrunner")
    p.add_argument("--targets", nargs="+", default=["imxrt700", "imxrt700cm"])
    args = p.parse_args()
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)  # the host-reference notice, once per model
    runner = load_runner(args.runner)
    print(f"runner {runner.name}: {len(runner.kernels)} kernels ({runner.source}); model buffer "
          f"{runner.buffers.get('model', 'unknown')} bytes")
    for example in EXAMPLES:
        for target in args.targets:
            print(check(example, target, runner), flush=True)


if __name__ == "__main__":
    main()

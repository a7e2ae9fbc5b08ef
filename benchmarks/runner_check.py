"""Would the bundled examples load on NXP's executorch_modelrunner firmware today? Lowers examples/cifarnet.py,
ds_cnn.py and vww_mobilenet.py (random calibration, as `compile ... --random-calibration`) for each target and
checks every .pte against a runner's kernel table and model buffer (`executorch_neutron.board.runners`): prints,
per model and target, the .pte size, its CPU operators and the ones the firmware lacks (LOAD_MODEL error 0x14).
With --suite, also the models tests/test_backend_suite.py lowers (one model of each operator file of ExecuTorch's
backend test suite, its `_dtype` test where it has one): how many would fail to load, and on which operators.

    python benchmarks/runner_check.py [--runner modelrunner|FILE] [--targets imxrt700 imxrt700cm] [--suite]
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from pathlib import Path

from executorch_neutron import lower
from executorch_neutron.board.runners import check_pte, load_runner, too_big
from executorch_neutron.models.loading import load_model, random_samples
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


def suite_ptes(target: str):
    """(operator file, .pte bytes or None) for the model of each operator file that tests/test_backend_suite.py
    picks, lowered by the suite's own tester with this target's flow."""
    from executorch.backends.test.harness.stages import StageType

    from executorch_neutron import backend_suite as suite

    flow, made = suite.flow(target), []
    factory = flow.tester_factory
    flow.tester_factory = lambda *a, **k: made.append(factory(*a, **k)) or made[-1]
    for file in suite.operator_files():
        tests = suite.operator_tests(file)
        name, fn = next(((n, f) for n, f in tests if n.endswith("_dtype")), tests[0])
        with suite.session(seed=0):
            suite.run_test_function(flow, file, name, fn, max_models=1)
        stage = made[-1].stages.get(StageType.SERIALIZE) if made else None
        made.clear()
        yield file, getattr(stage, "buffer", None)


def check_suite(target: str, runner) -> str:
    failing, missing, lowered, files = [], Counter(), 0, 0
    for file, pte in suite_ptes(target):
        files += 1
        if pte is None:  # the suite skipped the model, or it did not reach the .pte
            continue
        lowered += 1
        findings = check_pte(pte, runner)
        if findings:
            failing.append(file.removeprefix("test_"))
            missing.update(f.operator for f in findings)
    return (f"suite {target}: {lowered} of {files} operator files' models lowered to a .pte, {len(failing)} would fail "
            f"LOAD_MODEL on {runner.name} (0x14)"
            f"\n  missing operators (models): {', '.join(f'{op} ({n})' for op, n in missing.most_common()) or 'none'}"
            f"\n  failing: {', '.join(failing) or 'none'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runner", default="modelrunner")
    p.add_argument("--targets", nargs="+", default=["imxrt700", "imxrt700cm"])
    p.add_argument("--suite", action="store_true", help="also the backend suite's models (tens of minutes)")
    args = p.parse_args()
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)  # the host-reference notice, once per model
    runner = load_runner(args.runner)
    print(f"runner {runner.name}: {len(runner.kernels)} kernels ({runner.source}); model buffer "
          f"{runner.buffers.get('model', 'unknown')} bytes")
    for example in EXAMPLES:
        for target in args.targets:
            print(check(example, target, runner), flush=True)
    for target in args.targets if args.suite else ():
        print(check_suite(target, runner), flush=True)


if __name__ == "__main__":
    main()

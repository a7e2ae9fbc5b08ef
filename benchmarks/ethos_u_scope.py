"""Which back end's limits decide: per case of tests/ethos_u/neutron_limit_cases.py, the verdict on the case's
operator for imxrt700 (Neutron), imx93 (Ethos-U65 through Vela) and ethos-u55-128, before and after a change.

    .venv/bin/python benchmarks/ethos_u_scope.py [--before REV] [--cases NAME ...] [--write-docs]

"after" is the tree on PYTHONPATH (this checkout's src); "before" is git revision REV's src (extracted with
`git archive` into a temporary directory, run in a child process). Verdicts: NPU (delegated and compiled),
CPU with the NPU the reason names (Neutron, or Vela's rule for Ethos-U), or "fails" when lowering stops (Vela put
a delegated operator on the CPU at preprocess). Prints a table and the counts; never asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "ethos_u")]  # harness, neutron_limit_cases

TARGETS = ("imxrt700", "imx93", "ethos-u55-128")


def verdict(case, target: str) -> str:
    import torch

    from executorch_neutron import lower
    from executorch_neutron.models import zoo

    torch.manual_seed(0)
    model, inputs = case.make().eval(), (torch.randn(*case.shape),)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            result = lower(model, inputs, [inputs] + zoo.calibration(inputs, 3), target=target,
                           constraints=case.constraints)
    except Exception as exc:  # noqa: BLE001 - a benchmark reports the failure
        return f"fails: {type(exc).__name__}"
    refused = [r for r in result.report.rejections if r.op == case.op]
    if not refused:
        return "NPU"
    r = refused[0]
    who = "Vela" if "Vela:" in r.reason else getattr(r, "npu", "Neutron")
    return f"CPU ({who}: {r.reason.split(': Vela:')[0][:48]})"


def measure(names, targets) -> dict:
    from neutron_limit_cases import ALL

    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    return {n: {t: verdict(ALL[n], t) for t in targets} for n in names}


def before(rev: str, names, targets) -> dict:
    """The verdicts of revision `rev`'s src, measured in a child process (this script, --json)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, check=True, capture_output=True).stdout
        tarfile.open(fileobj=io.BytesIO(archive)).extractall(tmp, filter="data")
        env = dict(os.environ, PYTHONPATH=str(Path(tmp) / "src"), PYTHONWARNINGS="ignore")
        out = subprocess.run([sys.executable, __file__, "--json", "--cases", *names, "--targets", *targets], env=env,
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    import _docs
    from neutron_limit_cases import ALL, DELEGATED

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", metavar="REV", help="also measure git revision REV (e.g. main)")
    p.add_argument("--cases", nargs="*", default=list(ALL), choices=list(ALL))
    p.add_argument("--targets", nargs="*", default=list(TARGETS))
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the child process of --before
    _docs.add_argument(p)
    args = p.parse_args()
    after = measure(args.cases, args.targets)
    if args.json:
        print(json.dumps(after))
        return
    old = before(args.before, args.cases, args.targets) if args.before else None
    with _docs.figures(args, "benchmarks/ethos_u_scope.py", "ethos_u_scope", "Which back end's limits decide"):
        _print(args, old, after, ALL, DELEGATED)


def _print(args, old, after, ALL, DELEGATED) -> None:
    cols = []
    for t in args.targets:
        cols += [f"{t} before", f"{t} after"] if old else [t]
    print("| case | expected on Ethos-U | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 2) + "|")
    for n in args.cases:
        cells = []
        for t in args.targets:
            cells += [old[n][t], after[n][t]] if old else [after[n][t]]
        expected = "NPU" if n in DELEGATED else f"CPU (Vela: {ALL[n].ethos_u})"
        print(f"| {n} | {expected} | " + " | ".join(cells) + " |", flush=True)
    for t in args.targets:
        for label, verdicts in (("before", old), ("after", after)):
            if verdicts is None:
                continue
            v = [verdicts[n][t] for n in args.cases]
            same = "" if old is None or label == "before" else \
                f"; verdicts equal to before: {sum(old[n][t] == after[n][t] for n in args.cases)}"
            print(f"{t} {label}: NPU {sum(x == 'NPU' for x in v)}, CPU with a Neutron reason "
                  f"{sum('(Neutron' in x for x in v)}, CPU with Vela's reason {sum('(Vela' in x for x in v)}, "
                  f"lowering fails {sum(x.startswith('fails') for x in v)} (of {len(v)}){same}")


if __name__ == "__main__":
    main()

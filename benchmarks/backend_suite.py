"""ExecuTorch's backend test suite (operators/) run with this project's flows: counts per suite result.

    PYTHONPATH=src .venv/bin/python benchmarks/backend_suite.py [--flows imxrt700 imxrt700cm imx93]
        [--files test_add test_lstm ...] [--out out/backend_suite] [--before DIR] [--write-docs]

Each flow (`executorch_neutron.backend_suite.flow(target)`) quantizes with the target's quantizer, partitions with
its partitioner, serializes and runs the program in ExecuTorch's runtime with the host back ends registered; the
suite's own `run_test` decides each result (SUCCESS: delegated and within the suite's tolerances; SUCCESS_UNDELEGATED;
LOWER_FAIL; PTE_LOAD_FAIL; PTE_RUN_FAIL; OUTPUT_MISMATCH_FAIL; UNKNOWN_FAIL; QUANTIZE_FAIL; SKIPPED: the model
does not run in eager mode or export, or keeps an operator ExecuTorch's portable kernels lack).
Printed per flow: the counts, the share of records delegated, the worst output difference in int8 steps (of the
output's quantization scale) over the records that ran; then the counts per operator file. The records go to
`<out>/<flow>.json`; `--load DIR [DIR ...]` prints saved records (a later run of some files replaces their records
of an earlier one); `--before DIR` reads an earlier run's JSON files for before/after rows; `--write-docs` puts
the tables on docs/backend_suite.md. Then, for the records that stayed undelegated, the partitioner's reasons with
the number of records each appears in, and how many undelegated records carry no reason. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

sys.path.insert(0, str(ROOT / "benchmarks"))

import _docs  # noqa: E402
from executorch_neutron import backend_suite as suite  # noqa: E402

RESULTS = ["SUCCESS", "SUCCESS_UNDELEGATED", "SKIPPED", "QUANTIZE_FAIL", "LOWER_FAIL", "PTE_LOAD_FAIL",
           "PTE_RUN_FAIL", "OUTPUT_MISMATCH_FAIL", "UNKNOWN_FAIL"]
SHORT = {"SUCCESS": "ok", "SUCCESS_UNDELEGATED": "ok-cpu", "SKIPPED": "skip", "QUANTIZE_FAIL": "quant",
         "LOWER_FAIL": "lower", "PTE_LOAD_FAIL": "load", "PTE_RUN_FAIL": "run", "OUTPUT_MISMATCH_FAIL": "mismatch",
         "UNKNOWN_FAIL": "unknown"}


def run_flow(target: str, files: list[str], verbose: bool) -> list[dict]:
    flow = suite.flow(target)
    records = []
    with suite.session(seed=0):
        for i, file in enumerate(files):
            t0 = time.perf_counter()
            got = suite.run_operator_file(file, flow)
            records += [asdict(r) for r in got]
            counts = Counter(r.result for r in got)
            print(f"  [{i + 1}/{len(files)}] {file}: {dict(counts)} ({time.perf_counter() - t0:.0f} s)", flush=True)
            if verbose:
                for r in got:
                    if r.result not in ("SUCCESS", "SUCCESS_UNDELEGATED"):
                        print(f"      {r.test}#{r.subtest} {r.result}: {r.error[:300]}")
    return records


def summary(records: list[dict]) -> dict:
    counts = Counter(r["result"] for r in records)
    ran = [r for r in records if r["result"] not in ("SKIPPED",)]
    steps = [r["max_steps"] for r in records if r["max_steps"] is not None]
    return {"counts": counts, "records": len(records),
            "delegated": sum(r["result"] == "SUCCESS" for r in ran), "ran": len(ran),
            "max_steps": max(steps) if steps else None,
            "steps_over_1": sum(s > 1.001 for s in steps)}


def fmt_counts(counts: Counter) -> str:
    return " ".join(f"{SHORT[k]}={counts[k]}" for k in RESULTS if counts.get(k))


def table(flows: dict[str, list[dict]], before: dict[str, list[dict]]) -> list[str]:
    lines = ["| flow | " + " | ".join(RESULTS) + " | delegated | worst steps | records over 1 step |",
             "|---" * (len(RESULTS) + 4) + "|"]
    for name, records in flows.items():
        files = {r["file"] for r in before[name]} if name in before else None  # compare the same files
        for label, recs in (("before", before.get(name)), ("after" if name in before else "", records)):
            if recs is None:
                continue
            recs = [r for r in recs if files is None or r["file"] in files]
            s = summary(recs)
            share = f"{s['delegated']}/{s['ran']} ({100 * s['delegated'] / max(s['ran'], 1):.0f}%)"
            worst = "-" if s["max_steps"] is None else f"{s['max_steps']:.2f}"
            lines.append(f"| {name} {label} | " + " | ".join(str(s["counts"].get(k, 0)) for k in RESULTS)
                         + f" | {share} | {worst} | {s['steps_over_1']} |")
    return lines


def per_file(flows: dict[str, list[dict]]) -> list[str]:
    names = list(flows)
    lines = ["| operator file | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    by_file = {n: defaultdict(list) for n in names}
    for n, records in flows.items():
        for r in records:
            by_file[n][r["file"]].append(r)
    for file in sorted({f for n in names for f in by_file[n]}):
        cells = []
        for n in names:
            recs = by_file[n].get(file, [])
            s = summary(recs)
            cells.append(f"{fmt_counts(s['counts'])} (NPU {s['delegated']}/{s['ran']})")
        lines.append(f"| {file.removeprefix('test_')} | " + " | ".join(cells) + " |")
    return lines


def failures(flows: dict[str, list[dict]]) -> list[str]:
    lines = []
    for n, records in flows.items():
        for r in records:
            if r["result"] not in ("SUCCESS", "SUCCESS_UNDELEGATED", "SKIPPED"):
                lines.append(f"- {n} {r['test']}#{r['subtest']}: {r['result']}: {r['error'][:240]}")
    return lines


def cpu_reasons(flows: dict[str, list[dict]]) -> list[str]:
    """Why records stay undelegated: per operator the partitioner refused, the number of SUCCESS_UNDELEGATED
    records per flow it refused it in and one of its reasons (the most frequent); then the number of undelegated
    records that carry no reason."""
    names = list(flows)
    records = {n: Counter() for n in names}
    texts: dict[str, Counter] = defaultdict(Counter)
    for n, recs in flows.items():
        for r in recs:
            if r["result"] == "SUCCESS_UNDELEGATED":
                ops = {line.split(": ", 1)[0] for line in r.get("cpu_reasons", [])}
                records[n].update(ops)
                for line in r.get("cpu_reasons", []):
                    op, _, reason = line.partition(": ")
                    texts[op][f"{reason} ({n.removeprefix(suite.FLOW_PREFIX)})"] += 1
    lines = ["| operator left on the CPU | " + " | ".join(f"{n} records" for n in names) + " | a reason given |",
             "|---" * (len(names) + 2) + "|"]
    for op in sorted(texts, key=lambda o: (-sum(records[n][o] for n in names), o)):
        reason = texts[op].most_common(1)[0][0].replace("|", "\\|")
        lines.append(f"| {op} | " + " | ".join(str(records[n][op] or "") for n in names) + f" | {reason[:220]} |")
    silent = {n: sum(r["result"] == "SUCCESS_UNDELEGATED" and not r.get("cpu_reasons") for r in recs)
              for n, recs in flows.items()}
    lines.append("| **undelegated records with no reason** | " + " | ".join(str(silent[n]) for n in names) + " | |")
    return lines


def load_dirs(paths: list[Path]) -> dict[str, list[dict]]:
    """The records of several runs, per flow: a later run's records replace the earlier runs' of each operator file
    it holds."""
    flows: dict[str, list[dict]] = {}
    for path in paths:
        for name, records in load_dir(path).items():
            files = {r["file"] for r in records}
            flows[name] = [r for r in flows.get(name, []) if r["file"] not in files] + records
    return {name: sorted(recs, key=lambda r: (r["file"], r["test"], r["subtest"])) for name, recs in flows.items()}


def load_dir(path: Path | None) -> dict[str, list[dict]]:
    if path is None:
        return {}
    return {p.stem: json.loads(p.read_text()) for p in sorted(path.glob("*.json"))}


def main() -> None:
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", nargs="+", default=list(suite.FLOW_TARGETS))
    parser.add_argument("--files", nargs="+", default=None, help="operators/ files (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "backend_suite")
    parser.add_argument("--load", type=Path, nargs="+", default=None,
                        help="print the <flow>.json records of DIR, run nothing; with several DIRs, a later one's "
                             "records replace the earlier ones' of the operator files it holds (a re-run of some files)")
    parser.add_argument("--before", type=Path, default=None, help="directory of an earlier run's <flow>.json")
    _docs.add_argument(parser)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    files = args.files or suite.operator_files()
    args.out.mkdir(parents=True, exist_ok=True)
    flows = load_dirs(args.load or [])
    for target in [] if args.load else args.flows:
        name = f"{suite.FLOW_PREFIX}{target}"
        print(f"{name}: {len(files)} operator files", flush=True)
        flows[name] = run_flow(target, files, args.verbose)
        (args.out / f"{name}.json").write_text(json.dumps(flows[name], indent=1))
    before = load_dir(args.before)
    with _docs.figures(args, "benchmarks/backend_suite.py", "backend_suite",
                       "ExecuTorch's backend test suite with this backend's flows"):
        print("\n".join(table(flows, before)))
        print()
        print("\n".join(per_file(flows)))
        print()
        print("\n".join(cpu_reasons(flows)))
        fails = failures(flows)
        if fails:
            print()
            print("\n".join(fails))


if __name__ == "__main__":
    main()

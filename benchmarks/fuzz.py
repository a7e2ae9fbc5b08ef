"""Fuzz a valid .pte across the whole file, through the CLI and the Python API; print the outcome counts.

    python benchmarks/fuzz.py [--n 300] [--seed 0] [--pte FILE --input X.npy] [--timeout 60] [--json] [--write-docs]

Each mutation changes 1-4 bytes at random offsets anywhere in the file (flatbuffer tables, CPU kernel arguments,
constants, delegate payloads) or truncates it; one in five instead edits a named field the way a person or a tool
would: the file identifier (magic), a delegate's backend id, an operator name, or a method input's sizes.
Every mutated file is run
  - through the Python API (`executorch_neutron.runtime.run`),
  - through the Python API with the same input values in channels_last memory layout (its outputs must equal the
    contiguous run's: "same" for the unmutated file), and
  - through the CLI (`executorch_neutron.cli.main(["run", ...])`),
in worker subprocesses that are restarted after a crash (the process died: a signal or an unexpected exit) or a
hang (no answer within --timeout seconds). The other outcomes are: clean error (NeutronRuntimeError / a one-line
`error:` with exit code 2), same (the outputs equal the unmutated file's) and different (ran, other outputs).
A "different" run whose mutation lies inside a host-reference payload is counted separately: those payloads
carry a checksum, so the target is 0 (like 0 crashes and 0 hangs). Other differences are expected: a changed
weight or quantization scale in the CPU part of a program is still a valid program.

Without --pte it builds a small two-partition model (conv | floor on the CPU | conv) with host-reference payloads.
No pass/fail: the figures are for reading (tests/runtime/test_fuzz.py runs a bounded version and asserts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

OUTCOMES = ("crash", "hang", "clean error", "unclear error", "same", "different", "different in payload")
MODES = ("api", "api-nhwc", "cli")  # api-nhwc: the API with channels_last inputs, compared with the api baseline
# a named field -> what a clean error about it must mention (else it counts as unclear)
FIELDS = {"identifier": "file identifier", "backend id": "backend", "operator name": "operator", "input sizes": "sizes"}


# --- the worker (a subprocess): runs one case per stdin line, answers one JSON line per case -----------------

def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def _api_case(pte: str, inputs) -> dict:
    from executorch_neutron.runtime import NeutronRuntimeError, run

    try:
        outputs = run(pte, inputs)
    except NeutronRuntimeError as exc:
        return {"status": "error", "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - an error of another type is an unclear one
        return {"status": "unclear", "message": f"{type(exc).__name__}: {exc}"}
    return {"status": "ran", "digest": _digest([o.numpy() for o in outputs])}


def _cli_case(pte: str, input_file: str, out_dir: str) -> dict:
    import contextlib
    import io

    import numpy as np

    from executorch_neutron import cli

    for f in Path(out_dir).glob("*.npy"):
        f.unlink()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(["run", pte, "--input", input_file, "--save-outputs", out_dir])
    if code != 0:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        clean = code == 2 and lines and lines[0].startswith("error:") and all(
            line.startswith(("error:", "hint:")) for line in lines)
        return {"status": "error" if clean else "unclear", "code": code, "message": " | ".join(lines)[:300]}
    outputs = [np.load(f) for f in sorted(Path(out_dir).glob("output_*.npy"))]
    return {"status": "ran", "digest": _digest(outputs)}


def worker(mode: str, input_file: str) -> None:
    import logging

    import numpy as np
    import torch

    logging.disable(logging.WARNING)

    def load(file: str) -> list:
        inputs = [torch.from_numpy(np.load(file))]
        if mode == "api-nhwc":
            inputs = [x.to(memory_format=torch.channels_last) if x.dim() == 4 else x for x in inputs]
        return inputs

    inputs = load(input_file)
    out_dir = tempfile.mkdtemp(prefix="fuzz_out_")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:  # "<pte>" or "<pte>\t<input.npy for this case>"
        pte, _, own = line.rstrip("\n").partition("\t")
        result = (_cli_case(pte, own or input_file, out_dir) if mode == "cli"
                  else _api_case(pte, load(own) if own else inputs))
        print(json.dumps(result), flush=True)


# --- the driver ----------------------------------------------------------------------------------------------

class Worker:
    """A worker subprocess fed one case at a time; restarted after a crash or a hang."""

    def __init__(self, mode: str, input_file: Path, timeout: float):
        self.mode, self.input_file, self.timeout = mode, input_file, timeout
        self.proc = None
        self.stderr = tempfile.TemporaryFile()

    def _start(self) -> None:
        self.stderr.seek(0)
        self.stderr.truncate()
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", self.mode, str(self.input_file)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env,
                                     text=True, bufsize=1)
        ready = self._answer(600)
        if not ready or not ready.get("ready"):
            raise RuntimeError(f"the {self.mode} worker did not start: {self._stderr_tail()}")

    def _answer(self, timeout: float) -> dict | None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"status": "died"}

    def _stderr_tail(self) -> str:
        self.stderr.seek(0)
        text = self.stderr.read().decode(errors="replace").strip().splitlines()
        return text[-1][:200] if text else ""

    def run(self, pte: Path, input_file: Path | None = None) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(f"{pte}\t{input_file}\n" if input_file else f"{pte}\n")
        self.proc.stdin.flush()
        answer = self._answer(self.timeout)
        if answer is None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"status": "hang"}
        if answer.get("status") == "died":
            code = self.proc.wait()
            tail = self._stderr_tail()
            self.proc = None
            return {"status": "crash", "code": code, "message": tail}
        return answer

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def _build_base(directory: Path) -> tuple[Path, Path]:
    import numpy as np
    import torch
    from torch import nn

    from executorch_neutron import lower
    from executorch_neutron.models.zoo import calibration

    class TwoPartitions(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)

        def forward(self, x):
            return self.b(torch.floor(torch.relu(self.a(x)) * 4.0))

    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 6, 5),)
    result = lower(TwoPartitions().eval(), inputs, [inputs] + calibration(inputs, 4), reference=True)
    pte, x = directory / "base.pte", directory / "x.npy"
    pte.write_bytes(result.pte)
    np.save(x, inputs[0].numpy())
    return pte, x


def payload_ranges(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of the file that hold host-reference Neutron payloads."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    from executorch_neutron.core.payload import PayloadError, unpack

    ranges = []
    for d in deserialize_pte_binary(data).program.backend_delegate_data:
        blob = bytes(d.data)
        try:
            if not unpack(blob).is_reference:
                continue
        except PayloadError:
            continue
        at = data.find(blob)
        if at >= 0:
            ranges.append((at, at + len(blob)))
    return ranges


def mutate_field(data: bytes, field: str, rng: random.Random) -> tuple[bytes, list[int]]:
    """A copy with one named field edited, and the offsets it changed. An edited input is given an input file of
    its new sizes (see `fuzz`), as a user who follows the program's metadata would."""
    if field == "input sizes":
        from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

        pf = deserialize_pte_binary(data)
        plan = pf.program.execution_plan[0]
        sizes = plan.values[plan.inputs[0]].val.sizes
        k = rng.randrange(len(sizes))
        sizes[k] += rng.choice([1, sizes[k]])  # always another size (+1 or doubled)
        out = bytes(serialize_pte_binary(pf))
        return out, [next((i for i, (a, b) in enumerate(zip(data, out)) if a != b), 0)]
    if field == "identifier":
        at = 4 + rng.randrange(4)
    else:
        from executorch.exir._serialize._program import deserialize_pte_binary

        plan = deserialize_pte_binary(data).program.execution_plan[0]
        names = [d.id for d in plan.delegates] if field == "backend id" else [o.name for o in plan.operators]
        name = rng.choice(names).encode()
        at = data.find(name) + rng.randrange(len(name))
    b = bytearray(data)
    b[at] = rng.choice([c for c in b"ABCXYZabcxyz_" if c != b[at]])
    return bytes(b), [at]


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, list[int]]:
    """A mutated copy and the offsets it changed (truncation: the first removed offset)."""
    if rng.random() < 0.1:
        cut = rng.randrange(0, len(data))
        return data[:cut], [cut]
    b = bytearray(data)
    offsets = sorted({rng.randrange(len(b)) for _ in range(rng.randint(1, 4))})
    for at in offsets:
        b[at] ^= rng.randrange(1, 256)
    return bytes(b), offsets


def _input_for(data: bytes, path: Path) -> Path:
    """An input file (zeros) with the sizes the (edited) program declares for its first input."""
    import numpy as np
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(data).program.execution_plan[0]
    np.save(path, np.zeros(list(plan.values[plan.inputs[0]].val.sizes), np.float32))
    return path


def classify(answer: dict, reference: str, in_payload: bool) -> str:
    status = answer["status"]
    if status in ("crash", "hang"):
        return status
    if status == "error":
        return "clean error"
    if status == "unclear":
        return "unclear error"
    if answer["digest"] == reference:
        return "same"
    return "different in payload" if in_payload else "different"


def fuzz(n: int, seed: int, pte: Path, input_file: Path, timeout: float, log=None) -> dict:
    data = pte.read_bytes()
    ranges = payload_ranges(data)
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="fuzz_pte_"))
    workers = {mode: Worker(mode, input_file, timeout) for mode in MODES}
    try:
        baseline = {mode: w.run(pte) for mode, w in workers.items()}
        for mode, answer in baseline.items():
            if answer.get("status") != "ran":
                raise RuntimeError(f"the unmutated .pte does not run through the {mode}: {answer}")
        layout_same = baseline["api-nhwc"]["digest"] == baseline["api"]["digest"]
        baseline["api-nhwc"] = baseline["api"]  # other layouts must give the contiguous outputs
        counts = {mode: Counter() for mode in workers}
        by_field = {f: Counter() for f in FIELDS}
        examples: dict[str, list] = {}
        for i in range(n):
            field = rng.choice(list(FIELDS)) if rng.random() < 0.2 else None
            mutated, offsets = mutate_field(data, field, rng) if field else mutate(data, rng)
            in_payload = any(lo <= at < hi for at in offsets for lo, hi in ranges)
            path = work / f"case_{i}.pte"
            path.write_bytes(mutated)
            own_input = _input_for(mutated, work / f"case_{i}.npy") if field == "input sizes" else None
            for mode, w in workers.items():
                answer = w.run(path, own_input)
                outcome = classify(answer, baseline[mode]["digest"], in_payload)
                if field and outcome == "clean error" and FIELDS[field] not in answer.get("message", ""):
                    outcome = "unclear error"  # an error code, not the field that is wrong
                counts[mode][outcome] += 1
                if field:
                    by_field[field][f"{mode}: {outcome}"] += 1
                if outcome in ("crash", "hang", "unclear error", "different in payload"):
                    examples.setdefault(f"{mode}: {outcome}", []).append(
                        {"case": i, "field": field, "offsets": offsets, "message": answer.get("message", "")})
                    if log:
                        print(f"case {i} {mode}: {outcome} at {offsets}: {answer.get('message', '')}",
                              file=log, flush=True)
            path.unlink()
            if own_input:
                own_input.unlink()
    finally:
        for w in workers.values():
            w.close()
    return {"n": n, "seed": seed, "file_bytes": len(data), "payload_bytes": sum(hi - lo for lo, hi in ranges),
            "counts": {mode: {k: c.get(k, 0) for k in OUTCOMES} for mode, c in counts.items()},
            "unmutated channels_last run equals contiguous": layout_same,
            "field mutations": {f: dict(sorted(c.items())) for f, c in by_field.items()},
            "examples": {k: v[:5] for k, v in examples.items()}}


def main() -> None:
    import _docs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="mutations (each runs through the API and the CLI)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pte", type=Path, help="the valid .pte to mutate (default: build a small one)")
    parser.add_argument("--input", type=Path, help="its input (.npy), with --pte")
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a case counts as a hang")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--worker", nargs=2, metavar=("MODE", "INPUT"), help=argparse.SUPPRESS)
    _docs.add_argument(parser)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    if args.pte:
        if not args.input:
            parser.error("--pte needs --input X.npy")
        pte, x = args.pte, args.input
    else:
        pte, x = _build_base(Path(tempfile.mkdtemp(prefix="fuzz_base_")))
    t0 = time.perf_counter()
    figures = fuzz(args.n, args.seed, pte, x, args.timeout, log=None if args.json else sys.stderr)
    figures["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    with _docs.figures(args, "benchmarks/fuzz.py", "fuzz", "Fuzzing the .pte: crashes, hangs, clean errors"):
        _print(args, figures)


def _print(args, figures: dict) -> None:
    print(f"{args.n} mutations of a {figures['file_bytes']}-byte .pte ({figures['payload_bytes']} bytes of "
          f"host-reference payloads), seed {args.seed}, {figures['seconds']} s")
    print(f"{'':<9}" + "".join(f"{k:>22}" for k in OUTCOMES))
    for mode, c in figures["counts"].items():
        print(f"{mode:<9}" + "".join(f"{c[k]:>22}" for k in OUTCOMES))
    print(f"unmutated .pte, channels_last input equals contiguous: {figures['unmutated channels_last run equals contiguous']}")
    for f, c in figures["field mutations"].items():
        print(f"field {f}: " + (", ".join(f"{k} {v}" for k, v in c.items()) or "not drawn"))


if __name__ == "__main__":
    main()

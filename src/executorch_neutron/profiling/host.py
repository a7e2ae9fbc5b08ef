"""Host profiling in ExecuTorch's own conventions: ETDump from the host runtime, ETRecord from `lower()`, the stock
`executorch.devtools.Inspector` reading both.

    result = lower(model, inputs, calib, etrecord=True)
    prof = profile(result.pte, inputs, runs=10, etrecord=result.etrecord, etdump_path="out/model.etdp")
    print(prof)                      # one row per runtime event: CPU kernels, each Neutron delegate call
    prof.inspector                   # the Inspector itself (to_dataframe(), event_blocks, ...)

On the host a Neutron delegate call runs its host-reference payload in LiteRT's reference kernels, so the times say
how the *program* is put together (which CPU kernels run between delegate calls, how often) and nothing about NPU
cycles. The same ETDump/ETRecord flow applies to an ETDump written by the device runtime.
"""

from __future__ import annotations

import statistics
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from ..backends import BACKENDS
from ..pte import inspect_pte
from ..runtime import load, run
from .trace import chrome_trace, write_chrome_trace

DELEGATE_CALL = "DELEGATE_CALL"
_DELEGATE_NAMES = {**{b.backend_id: b.npu for b in BACKENDS.values()}, "XnnpackBackend": "XNNPACK"}  # backend id -> row name
_LOAD_EVENTS = ("Method::init", "Program::load_method")
_CLOCK, _UNIT = "ns", "ms"  # the host runtime's event clock; the unit the Inspector gives durations in


@dataclass(frozen=True)
class EventRow:
    """One runtime event across the profiled runs (times in milliseconds). For a delegate call: `detail` lists
    the payload's TFLite operators, `op_types` the model's operators it computes (from the ETRecord, if given)."""

    name: str
    backend: str | None
    op_types: tuple[str, ...]
    detail: str
    runs: int
    median_ms: float
    min_ms: float
    max_ms: float


@dataclass
class Profile:
    runs: int
    rows: list[EventRow]
    load_ms: float
    etdump_path: Path | None  # None: the ETDump was read and not kept (profile(etdump_path=None))
    inspector: object  # executorch.devtools.Inspector
    delegates: list = field(default_factory=list)  # the method's pte.DelegateInfo, in instruction order

    def chrome_trace(self) -> dict:
        """The profiled runs as a Chrome trace (Perfetto, chrome://tracing): one track per delegate call and CPU
        kernel, one event per run (trace.py)."""
        return chrome_trace(named_events(self.inspector, self.delegates), _CLOCK, _UNIT)

    def save_trace(self, path: str | Path) -> Path:
        return write_chrome_trace(path, self.chrome_trace())

    @property
    def delegate_rows(self) -> list[EventRow]:
        return [r for r in self.rows if r.backend is not None]

    def __str__(self) -> str:
        kept = f"ETDump {self.etdump_path}" if self.etdump_path else "ETDump not kept (etdump_path / --etdump)"
        lines = [f"host profile: {self.runs} run(s), program load {self.load_ms:.3f} ms; {kept}",
                 f"{'event':<44} {'runs':>5} {'median ms':>10} {'min ms':>9} {'max ms':>9}"]
        for r in self.rows:
            lines.append(f"{r.name[:44]:<44} {r.runs:>5} {r.median_ms:>10.3f} {r.min_ms:>9.3f} {r.max_ms:>9.3f}")
            if r.detail:
                lines.append(f"    {r.detail}")
            if r.op_types:
                lines.append(f"    model ops: {', '.join(r.op_types)}")
        npus = sorted({_DELEGATE_NAMES[d.backend_id] for d in self.delegates if d.backend_id in _DELEGATE_NAMES})
        if npus:
            lines.append(f"host timings: {' and '.join(npus)} delegates run host-reference payloads in LiteRT's "
                         f"reference kernels on this machine; they are not NPU cycles")
        return "\n".join(lines)


def _delegate_detail(delegate) -> str:
    if delegate is None or not delegate.tflite_ops:
        return ""
    ops = ", ".join(f"{op} x{c}" if c > 1 else op for op, c in sorted(delegate.tflite_ops.items()))
    return f"{delegate.kind} payload, TFLite: {ops}"


def profile(
    pte: str | Path | bytes,
    inputs: Sequence[torch.Tensor],
    runs: int = 10,
    etrecord=None,
    etdump_path: str | Path | None = None,
    method: str = "forward",
) -> Profile:
    """Execute `method` `runs` times on the host with ETDump on, write the ETDump, and read it with ExecuTorch's
    Inspector (with `etrecord`, an ETRecord object or path, events carry the model's operator names)."""

    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    run(pte, list(inputs), method)  # once in a child process first: a crash there is one line (HostRunCrashed)
    program = load(pte, etdump=True)
    for _ in range(runs):
        program.execute(list(inputs), method)
    from executorch.devtools import Inspector
    from executorch.devtools.inspector import TimeScale

    with tempfile.TemporaryDirectory(prefix="neutron_profile_") as tmp:  # the Inspector reads it all at once
        path = program.write_etdump(etdump_path if etdump_path is not None else Path(tmp) / "program.etdp")
        if etrecord is not None and not isinstance(etrecord, (str, Path)):
            # the Inspector maps delegate calls to model ops only from a saved ETRecord, not the in-memory object
            saved = Path(tmp) / "etrecord.bin"
            etrecord.save(str(saved))
            etrecord = saved
        with warnings.catch_warnings():
            # "Output Buffer not found" (no debug buffer: timings only) and ETRecord kwargs it does not serialize
            warnings.simplefilter("ignore", UserWarning)
            inspector = Inspector(etdump_path=str(path), etrecord=None if etrecord is None else str(etrecord),
                                  source_time_scale=TimeScale(_CLOCK), target_time_scale=TimeScale(_UNIT))
    summary = inspect_pte(pte)
    delegates = next((m.delegates for m in summary.methods if m.name == method), [])
    return Profile(runs, *_rows(inspector, delegates), path if etdump_path is not None else None, inspector,
                   list(delegates))


def named_events(inspector, delegates):
    """Inspector events -> (name, backend, model ops, detail, event) in program order, the program's load events
    left out: a CPU kernel is its OPERATOR_CALL event named after the `native_call_<kernel>` event before it; the
    k-th DELEGATE_CALL is the k-th delegate of the method (instruction order)."""
    k, kernel = 0, None
    for block in inspector.event_blocks:
        for event in block.events:
            if event.perf_data is None or not list(event.perf_data.raw) or event.name in _LOAD_EVENTS:
                continue
            name, backend, ops, detail = event.name, None, (), ""
            if name.startswith("native_call_"):
                kernel = name[len("native_call_"):]
                continue
            if name == "OPERATOR_CALL":
                name, kernel = f"CPU kernel {kernel or '(unnamed)'}", None
            elif name == DELEGATE_CALL:
                d = delegates[k] if k < len(delegates) else None
                backend = event.delegate_backend_name or (d.backend_id if d else "?")
                name = f"{_DELEGATE_NAMES.get(backend, backend)} delegate {k}"
                ops = tuple(sorted({o for o in event.op_types if not o.startswith("quantized_decomposed.")}))
                detail = _delegate_detail(d)
                k += 1
            yield name, backend, ops, detail, event


def _rows(inspector, delegates) -> tuple[list[EventRow], float]:
    rows = []
    for name, backend, ops, detail, event in named_events(inspector, delegates):
        raw = list(event.perf_data.raw)
        rows.append(EventRow(name, backend, ops, detail, len(raw), statistics.median(raw), min(raw), max(raw)))
    load_ms = sum(e.perf_data.raw[0] for b in inspector.event_blocks for e in b.events
                  if e.name in _LOAD_EVENTS and e.perf_data is not None and list(e.perf_data.raw))
    return rows, load_ms

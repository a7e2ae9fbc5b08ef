"""A profile as a Chrome trace (the JSON Trace Event Format that Perfetto and chrome://tracing open).

`chrome_trace(events, source_scale, target_scale)` takes the runtime events of an ETDump as profiling.py names
them (a CPU kernel by its operator, a delegate call by its back end and index, with the model operators it
computes) and lays them out as one track (trace "thread") per event of the program: each delegate call and each
CPU kernel call site gets its own row, in program order, and every profiled run adds one complete ("X") event
to each row. ExecuTorch's Inspector gives start times in the runtime's clock unit (`source_scale`, ns on the host)
and durations in its target unit (`target_scale`, ms by default); the trace holds microseconds.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.atomic import write_text

_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6, "cycles": 1.0}  # one unit in microseconds (cycles: as is)


def chrome_trace(events, source_scale: str = "ns", target_scale: str = "ms", process: str = "ExecuTorch") -> dict:
    """`events`: (track name, backend or None, model operators, detail, Inspector event) in program order."""
    start_us, dur_us = _US[source_scale], _US[target_scale]
    out = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": process}}]
    seen: dict[str, int] = {}
    for tid, (name, backend, ops, detail, event) in enumerate(events, start=1):
        seen[name] = seen.get(name, 0) + 1
        track = name if seen[name] == 1 else f"{name} #{seen[name]}"
        out.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": track}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
        args = {k: v for k, v in (("backend", backend), ("model_ops", list(ops)), ("detail", detail)) if v}
        for run, (start, duration) in enumerate(zip(event.start_time or (), event.perf_data.raw)):
            out.append({"name": name, "cat": "delegate" if backend else "cpu", "ph": "X", "pid": 1, "tid": tid,
                        "ts": float(start) * start_us, "dur": float(duration) * dur_us, "args": {"run": run, **args}})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def write_chrome_trace(path: str | Path, trace: dict) -> Path:
    return write_text(path, json.dumps(trace) + "\n")

"""The time estimate of a .pte read from the file alone (the `report X.pte` command), as compile's report
gives it from the lowering: each delegate's estimate by its back end from the partition's TFLite in the .pte
(`Backend.pte_tflite`, `Backend.pte_estimate`), the CPU part from the .pte's kernel calls (`macs.pte_cpu_work`, the
list `macs.cpu_work` reads from the lowered graph), the total and its notes by the back end's `estimate_total` and
`estimate_notes`, worded by the report's own lines (render.py).

A delegate whose payload is device code without the TFLite it was compiled from (a device compiler's output, or a
command stream lowered without its host reference) has no estimate here: the estimate is not available, and says
why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import backends
from ..core.messages import first_line
from ..pte import PteFile, read_pte
from .macs import pte_cpu_work
from .render import estimate_line, partition_estimate_line


@dataclass
class PteEstimate:
    total: dict | None  # the back end's total (`Backend.estimate_total`), None when it is not available
    partitions: list[dict] = field(default_factory=list)  # per delegate: {"delegate", "backend_id", "estimate"}
    notes: list[str] = field(default_factory=list)  # the back end's notes (`Backend.estimate_notes`)
    why_not: str | None = None  # why there is no total

    def lines(self) -> list[str]:
        if self.total is None:
            return [f"estimate: not available: {self.why_not}"]
        lines = [estimate_line(self.total)]
        lines += [f"  delegate {p['delegate']} ({p['backend_id']}): {partition_estimate_line(p['estimate'])}"
                  for p in self.partitions]
        return lines + self.notes

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_dict(self) -> dict:
        """The `estimate` block of `report --json`: as compile's JSON report has it (its notes, the total, each
        partition's), or {"available": false, "reason": ...}."""
        if self.total is None:
            return {"available": False, "reason": self.why_not}
        return {"available": True, "notes": self.notes, **self.total,
                "partitions": [{"delegate": p["delegate"], "backend_id": p["backend_id"], **p["estimate"]}
                               for p in self.partitions]}


def estimate_pte(pte) -> PteEstimate:
    """The estimate of a .pte's `forward` method (its first), given as a path, bytes or a `PteFile`."""
    pte_file = pte if isinstance(pte, PteFile) else read_pte(pte)
    plan = pte_file.program.execution_plan[0]
    estimates, spec, backend, missing = [], None, None, []
    for index, delegate in enumerate(plan.delegates):
        row = backends.for_id(delegate.id)
        blob = pte_file.blob(delegate)
        if row is None or not row.claims(blob):
            missing.append(f"delegate {index} ({delegate.id}) is not a payload of this package")
            continue
        if row.pte_estimate is None:
            missing.append(f"delegate {index}'s back end ({delegate.id}) gives no estimate from a .pte")
            continue
        tflite = row.pte_tflite(blob, pte_file) if row.pte_tflite else None
        if tflite is None:
            kind = row.view(blob)["kind"]
            missing.append(f"delegate {index}'s payload ({kind}) is device code without the partition's TFLite, "
                           f"which the estimate is made from; compile's report gives it, or lower with the "
                           f"TFLite kept in the .pte (its host reference)")
            continue
        try:
            found = row.pte_estimate(tflite, pte_file.compile_spec(delegate))
        except Exception as exc:  # noqa: BLE001 - the report goes on without the estimate, saying why
            missing.append(f"delegate {index}: its back end could not estimate it ({first_line(exc)})")
            continue
        spec = spec or pte_file.compile_spec(delegate)
        backend = backend or row
        estimates.append({"delegate": index, "backend_id": delegate.id, "estimate": found})
    if missing or not estimates:
        return PteEstimate(None, why_not="; ".join(missing) or "the program has no delegate: nothing runs on an NPU")
    if backend.estimate_total is None:
        return PteEstimate(None, why_not=f"the {backend.npu} back end gives no total estimate")
    target = spec.target_info
    total = backend.estimate_total([e["estimate"] for e in estimates], pte_cpu_work(plan), target)
    notes = backend.estimate_notes(target, total) if backend.estimate_notes else []
    return PteEstimate(total, estimates, notes)

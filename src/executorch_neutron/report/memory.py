"""Will it fit: the memory a .pte needs on its target, read from the .pte itself, and the budget check.

`memory_section(pte, spec=None)` reads the program through pte.py (ExecuTorch's own deserializer): the method's
planned memory (`non_const_buffer_sizes`), its inputs and outputs (inside planned memory, or buffers the caller
provides), the constant data, named data and delegate payloads inside the .pte, and what each delegate's payload
needs beside it, as its back end states it (backends.py `memory`: e.g. the words of device microcode that size its
buffers, or its compiler's own figures). Each line says where it lives (the back end's
`placement`: where the .pte is stored, where ExecuTorch's working memory is) and where its figure comes from.

Totals per place: lines allocated per delegate call from the temp allocator count once, for the largest call
(delegate calls run one at a time); every other counted line adds up. `check_budget` refuses a program whose SRAM
or flash total exceeds a budget. Sizes: `parse_size("64KiB")`; KB/MB are decimal (1000), KiB/MiB and a bare K/M
binary (1024).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

from .. import backends
from ..compile_spec import NeutronCompileSpec
from ..core.memory import FLASH, SRAM, Block, BudgetError, parse_size
from ..pte import PteSummary, inspect_pte

logger = logging.getLogger(__name__)


def human(n: int) -> str:
    return f"{n:,} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.2f} MiB"


@dataclass
class MemorySection:
    target: str | None
    pte_bytes: int
    places: dict[str, str]  # program: where the .pte is stored; working: where ExecuTorch's buffers live
    program: list[Block]  # the program's own lines
    delegates: list[list[Block]]  # per delegate, what its payload needs beside the .pte
    sram_bytes: int | None  # the target's SRAM (None: the target's data does not bound it)
    flash_bytes: int | None  # the target's flash (None: not published)
    notes: list[str] = field(default_factory=list)
    budgets: dict[str, int] = field(default_factory=dict)  # SRAM / flash -> the budget held against it (bytes)

    @property
    def blocks(self) -> list[Block]:
        return self.program + [b for d in self.delegates for b in d]

    def required(self, where: str) -> int:
        """Bytes needed in `where`: every counted line there, with the per-call lines of the largest call."""
        fixed = sum(b.bytes for b in self.blocks if b.counted and not b.per_call and b.where == where)
        calls = [sum(b.bytes for b in d if b.counted and b.per_call and b.where == where) for d in self.delegates]
        return fixed + max(calls, default=0)

    def contributors(self, where: str) -> list[Block]:
        """The counted lines in `where`, largest first."""
        return sorted((b for b in self.blocks if b.counted and b.where == where and b.bytes), key=lambda b: -b.bytes)

    def available(self, where: str) -> int | None:
        """What `where`'s total is held against: the budget given for it, else the target's size (None: neither)."""
        if where in self.budgets:
            return self.budgets[where]
        return {SRAM: self.sram_bytes, FLASH: self.flash_bytes}.get(where)

    def with_budgets(self, sram: int | None = None, flash: int | None = None) -> "MemorySection":
        """This section with the budgets held against its SRAM and flash totals (bytes; None: none); a budget for a
        place the program does not use (flash on a target whose program lives in DRAM) gets a note saying it was
        not checked."""
        budgets = {where: b for where, b in ((SRAM, sram), (FLASH, flash)) if b is not None}
        notes = [n for n in self.notes if not (FLASH in budgets and n.endswith("pass --flash-budget to check one"))]
        section = dataclasses.replace(self, budgets=budgets, notes=notes)
        section.notes += section.unchecked_budgets()
        return section

    def unchecked_budgets(self) -> list[str]:
        """A sentence per budget that holds against nothing: the program uses none of that place on its target."""
        stored = self.places.get("program", "a place not known here")
        return [f"--{where.lower()}-budget {human(budget)} was not checked: on {self.target or 'this target'} the "
                f"program uses no {where} (it is stored in {stored})"
                for where, budget in self.budgets.items() if not self.contributors(where)]

    @property
    def estimated(self) -> bool:
        return any(b.estimated for b in self.blocks if b.counted)

    def totals(self) -> list[dict]:
        """Per place with anything in it: required bytes, the target's figure (None: not known), fits (None: no
        figure to hold it against)."""
        places = [p for p in dict.fromkeys([SRAM, FLASH, *(b.where for b in self.blocks)])
                  if p != "?" and self.contributors(p)]  # "?": no target recorded, no place to total
        out = []
        for p in places:
            need, have = self.required(p), self.available(p)
            out.append({"where": p, "required_bytes": need, "available_bytes": have,
                        "budget": p in self.budgets, "fits": None if have is None else need <= have})
        return out

    def lines(self) -> list[str]:
        head = f"memory (from the .pte, target {self.target or 'not recorded'}; program stored in " \
               f"{self.places.get('program', '?')}, working memory in {self.places.get('working', '?')}):"
        out = [head]
        for b in self.blocks:
            flag = "" if b.counted else " [inside another line, not added]"
            flag += " [estimate]" if b.estimated else ""
            flag += " [per call]" if b.per_call and b.counted else ""
            out.append(f"  {b.what}: {human(b.bytes)} in {b.where}{flag} ({b.source})")
        for t in self.totals():
            have = t["available_bytes"]
            of = (f"of the {human(have)} budget" if t["budget"] else f"of {human(have)}") if have else ""
            verdict = (f"{of} ({100 * t['required_bytes'] / have:.1f}%, "
                       f"{'fits' if t['fits'] else 'does NOT fit'})" if have else
                       f"(the target's {t['where']} size is not known here: pass a budget)"
                       if t["where"] in (SRAM, FLASH) else "(the board's memory: no budget checks it)")
            out.append(f"  total {t['where']}: {human(t['required_bytes'])} {verdict}")
        out += [f"  note: {n}" for n in self.notes]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_dict(self) -> dict:
        return {"target": self.target, "pte_bytes": self.pte_bytes, "places": dict(self.places),
                "estimated": self.estimated,
                "program": [b.to_dict() for b in self.program],
                "delegates": [[b.to_dict() for b in d] for d in self.delegates],
                "totals": self.totals(), "notes": list(self.notes),
                "budgets": {where.lower(): b for where, b in self.budgets.items()}}


def _spec_of(summary: PteSummary) -> NeutronCompileSpec | None:
    """The compile spec the first delegate of ours was lowered with (its compile specs in the .pte)."""
    names = {f.name for f in dataclasses.fields(NeutronCompileSpec)}
    for d in summary.delegates:
        if backends.for_id(d.backend_id) is not None and "target" in d.compile_specs:
            return NeutronCompileSpec(**{k: tuple(v) if isinstance(v, list) else v
                                         for k, v in d.compile_specs.items() if k in names})
    return None


def _io(kind: str, tensors, working: str) -> list[Block]:
    planned = sum(t.nbytes for t in tensors if t.planned)
    given = sum(t.nbytes for t in tensors if not t.planned)
    out = []
    if planned:
        out.append(Block(kind, planned, working, "memory-planned: inside planned memory", counted=False))
    if given:
        out.append(Block(f"{kind} (not memory-planned)", given, working, "buffers the caller provides"))
    return out


def memory_section(pte: str | Path | bytes | PteSummary, spec: NeutronCompileSpec | None = None) -> MemorySection:
    """The memory section of a .pte (a path, its bytes, or `inspect_pte(..., memory=True)`); `spec`: the
    lowering's compile spec (default: the one its delegates carry)."""
    summary = pte if isinstance(pte, PteSummary) else inspect_pte(pte, memory=True)
    spec = spec or _spec_of(summary)
    target = spec.target_info if spec is not None else None
    backend = backends.BACKENDS[target.kind] if target is not None else None
    notes = []
    try:
        places = backend.placement(spec) if backend is not None and backend.placement else {}
    except Exception as exc:  # noqa: BLE001 - e.g. a configuration file without the named sections
        places = {}
        notes.append(f"where each part lives is unknown: {type(exc).__name__}: {exc}")
    program, working = places.get("program", "?"), places.get("working", "?")
    lines = [Block(".pte file", summary.bytes, program, "the whole program, stored and read in place")]
    multi = len(summary.methods) > 1
    for m in summary.methods:
        name = f" of {m.name}" if multi else ""
        lines.append(Block(f"planned memory{name}", sum(m.planned_buffers), working,
                           f"ExecuTorch's memory plan: the method's non_const_buffer_sizes ({len(m.planned_buffers)} "
                           f"buffer(s) the runtime is given)"))
        lines += _io(f"inputs{name}", m.inputs, working) + _io(f"outputs{name}", m.outputs, working)
    if summary.constant_bytes:
        lines.append(Block("constant data", summary.constant_bytes, program,
                           "the program's constant buffer (CPU kernels' constants), inside the .pte", counted=False))
    for m in summary.methods:
        lines += [Block(f"delegate {d.index} payload ({d.backend_id})", d.bytes, program, "inside the .pte",
                        counted=False) for d in m.delegates]
    if summary.named_data_bytes:
        lines.append(Block("named data", summary.named_data_bytes, program, "inside the .pte (e.g. host-reference "
                           "TFLite the device never reads; --device-only leaves it out)", counted=False))
    delegates = []
    for d in summary.delegates:
        delegates.append([Block(**b) for b in d.memory])
        if d.error:
            notes.append(f"delegate {d.index}: its payload could not be read ({d.error})")
    if target is None:
        notes.append("the .pte records no target (no delegate of ours): places and the target's sizes are unknown")
    sram = (target.sram_bytes or None) if target is not None else None
    flash = target.flash_bytes if target is not None else None
    if target is not None and flash is None and FLASH in places.values():
        notes.append(f"{target.name}: no flash size is published for this target here; pass --flash-budget to check one")
    return MemorySection(target.name if target is not None else None, summary.bytes, places, lines, delegates,
                         sram, flash, notes)


def check_budget(result_or_pte, sram: int | str | None = None, flash: int | str | None = None) -> MemorySection:
    """Raise BudgetError when the program needs more SRAM or flash than the budgets (sizes as `parse_size`
    reads them); returns the memory section with the budgets (`MemorySection.with_budgets`; a budget for a place the
    program does not use is logged as not checked). `result_or_pte`: a LoweringResult, a MemorySection, a .pte path
    or bytes."""
    section = result_or_pte if isinstance(result_or_pte, MemorySection) else (
        result_or_pte.report.memory if hasattr(result_or_pte, "report") else memory_section(result_or_pte))
    if section.target is None and (sram is not None or flash is not None):
        raise BudgetError("the .pte records no target (no delegate of ours), so where its parts live is unknown: "
                          "check the LoweringResult, or memory_section(pte, spec) with the lowering's spec")
    section = section.with_budgets(None if sram is None else parse_size(sram),
                                   None if flash is None else parse_size(flash))
    for note in section.unchecked_budgets():
        logger.warning(note)
    over = []
    for where, have in section.budgets.items():
        need = section.required(where)
        if need > have:
            parts = ", ".join(f"{b.what} {human(b.bytes)}" for b in section.contributors(where))
            over.append(f"{where}: needs {human(need)} ({need:,} B), the budget is {human(have)} ({have:,} B), "
                        f"{human(need - have)} over; it holds: {parts}")
    if over:
        raise BudgetError("the program does not fit its memory budget: " + "; ".join(over), section)
    return section

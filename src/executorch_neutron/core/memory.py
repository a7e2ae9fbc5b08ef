"""One line of a program's memory section: what occupies memory on the device, how many bytes, where it lives and
where the figure comes from. Back ends return these for their delegate payloads (their row's `memory` in
backends.py); report/memory.py adds the program's own lines (planned memory, constants, inputs and outputs) and
sums them per place.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

#: the places a line can live in; the budgets check SRAM and flash
SRAM, FLASH, DRAM = "SRAM", "flash", "DRAM"


@dataclass(frozen=True)
class Block:
    what: str  # e.g. "NPU scratch (neutron_0)"
    bytes: int
    where: str  # SRAM, flash or DRAM
    source: str  # where the figure comes from ("microcode word 9", "Vela's scratch_size block", "estimate: ...")
    estimated: bool = False  # True: our estimate, not a figure the program or its compiler states
    counted: bool = True  # False: shown for information, already inside another line's figure
    per_call: bool = False  # True: allocated per delegate call from the method's temp allocator (the largest counts)

    def to_dict(self) -> dict:
        return asdict(self)

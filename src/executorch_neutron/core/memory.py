"""One line of a program's memory section: what occupies memory on the device, how many bytes, where it lives and
where the figure comes from. Back ends return these for their delegate payloads (their row's `memory` in
backends.py); report/memory.py adds the program's own lines (planned memory, constants, inputs and outputs) and
sums them per place.
"""

from __future__ import annotations

import re
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


_UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "kb": 1000, "m": 1024 ** 2, "mib": 1024 ** 2, "mb": 1000 ** 2,
          "g": 1024 ** 3, "gib": 1024 ** 3, "gb": 1000 ** 3}
SIZE_HELP = ("a size in bytes: 65536, 64KiB / 64K (x 1024), 64KB (x 1000), 2MiB / 2M (x 1024^2), 2MB (x 1000^2); "
             "case-insensitive")


class BudgetError(ValueError):
    """A size that cannot be read, or a program that exceeds a memory budget (`section`: its memory section, with
    the budgets)."""

    def __init__(self, message: str, section=None):
        super().__init__(message)
        self.section = section


def parse_size(text: str | int) -> int:
    """Bytes of a size such as 65536, '64KiB', '64K', '512KB', '2MB', '1.5MiB', '7.32 MiB' (see SIZE_HELP); a
    fraction of a unit is rounded to the nearest byte, so a figure copied from the report is a valid budget."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise BudgetError(f"size {text}: a size cannot be negative")
        return text
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise BudgetError(f"size {text!r} is not a size: give {SIZE_HELP}")
    value = float(match.group(1)) * _UNITS[unit]
    if value != int(value) and _UNITS[unit] == 1:
        raise BudgetError(f"size {text!r} is not a whole number of bytes")
    return round(value)  # '7.32 MiB', as the report prints sizes: to the nearest byte

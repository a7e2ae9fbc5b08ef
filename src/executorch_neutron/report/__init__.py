"""Delegation reports: what runs on the NPU, what stays on the CPU and why; and what is inside a .pte file.

    report = lower(...).report        # DelegationReport
    print(report); report.save("r.html")   # .md / .html / .json (schema: report/schema.json) / text
    inspect_pte("model.pte")          # PteSummary: methods, CPU kernels, delegates and their payloads
    memory_section("model.pte")       # what it needs in SRAM and flash, and where each part lives
    check_budget(result, sram="512KiB", flash="2MB")   # BudgetError when it does not fit
"""

from .delegation import CpuNode, DelegationReport, PartitionReport
from .macs import MAC_FORMULA
from .memory import BudgetError, MemorySection, check_budget, memory_section, parse_size
from .render import SCHEMA_PATH, load_schema

__all__ = ["BudgetError", "CpuNode", "DelegationReport", "MAC_FORMULA", "MemorySection", "PartitionReport",
           "SCHEMA_PATH", "check_budget", "inspect_pte", "load_schema", "memory_section", "parse_size"]


def inspect_pte(pte):
    """Summarize a .pte (path or bytes): see executorch_neutron/pte.py."""
    from ..pte import inspect_pte as _inspect

    return _inspect(pte)

"""Delegation reports: what runs on the NPU, what stays on the CPU and why; and what is inside a .pte file.

    report = lower(...).report        # DelegationReport
    print(report); report.save("r.html")   # .md / .html / .json (schema: report/schema.json) / text
    inspect_pte("model.pte")          # PteSummary: methods, CPU kernels, delegates and their payloads
"""

from .delegation import CpuNode, DelegationReport, MemoryEstimate, PartitionReport
from .macs import MAC_FORMULA
from .render import SCHEMA_PATH, load_schema

__all__ = ["CpuNode", "DelegationReport", "MAC_FORMULA", "MemoryEstimate", "PartitionReport", "SCHEMA_PATH",
           "inspect_pte", "load_schema"]


def inspect_pte(pte):
    """Summarize a .pte (path or bytes): see executorch_neutron/pte.py."""
    from ..pte import inspect_pte as _inspect

    return _inspect(pte)

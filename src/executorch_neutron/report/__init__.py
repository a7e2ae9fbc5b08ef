"""Delegation reports: what runs on the NPU, what stays on the CPU and why."""

from .delegation import DelegationReport, PartitionReport

__all__ = ["DelegationReport", "PartitionReport"]

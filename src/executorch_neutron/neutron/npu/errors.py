"""Errors of the NPU compile step, each naming the partition and saying what to do."""

from __future__ import annotations


class NeutronCompileError(RuntimeError):
    """The NPU compile step could not turn a partition's TFLite into a delegate payload."""


class NeutronConverterCrash(NeutronCompileError):
    """The eIQ Neutron converter killed its (child) process, e.g. with a segmentation fault."""


class ConvertedModelError(NeutronCompileError):
    """The converter's output does not follow the NeutronGraph contract (see npu/extract.py)."""

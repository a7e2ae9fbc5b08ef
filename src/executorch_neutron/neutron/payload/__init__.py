"""Delegate blob format shared by the NPU compile step (writer) and the host runtime (reader)."""

from .format import (
    MICROCODE_MAGIC,
    REFERENCE_MAGIC,
    Header,
    Payload,
    PayloadError,
    pack,
    unpack,
)

__all__ = ["MICROCODE_MAGIC", "REFERENCE_MAGIC", "Header", "Payload", "PayloadError", "pack", "unpack"]

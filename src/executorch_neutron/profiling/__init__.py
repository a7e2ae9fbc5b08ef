"""Profiling a .pte on the host: ETDump from the host runtime plus the ETRecord of `lower()`, read by ExecuTorch's
Inspector (`host.py`: `profile`), and a profile as a Chrome trace (`trace.py`)."""

from .host import EventRow, Profile, named_events, profile

__all__ = ["EventRow", "Profile", "named_events", "profile"]

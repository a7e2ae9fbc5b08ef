"""Errors of the host runtime."""

from __future__ import annotations


class NeutronRuntimeError(RuntimeError):
    """Running a .pte on the host failed; the message says what was wrong and what to do."""


class HostBuildError(NeutronRuntimeError):
    """The host back-end library could not be built or loaded."""

"""What the shared layers need to know of a Neutron delegate, for the back-end table (backends.py): how to read
its blob for reports and `inspect_pte`, and what the host runtime runs for it (the blob itself: a host-reference
payload runs in LiteRT; device microcode is refused by the executor)."""

from __future__ import annotations

from ..core.payload import PayloadError, unpack


def view(blob: bytes, meta: dict | None = None, reference: bytes | None = None) -> dict:
    """The delegate as reports show it: payload kind, Neutron I/O counts and format flags, a function returning the
    host-reference TFLite (None for device microcode). Raises PayloadError for a damaged blob."""
    payload = unpack(blob)
    h = payload.header
    return {"kind": payload.kind, "inputs": h.n_inputs, "outputs": h.n_outputs,
            "input_formats": tuple(h.input_formats), "output_formats": tuple(h.output_formats),
            "tflite": (lambda: payload.tflite) if payload.is_reference else None, "meta": None}


def reference(lowered) -> bytes:
    """What the host runs for a lowered Neutron module: its blob."""
    return bytes(lowered.processed_bytes)


def claims(blob: bytes) -> bool:
    """Whether the host runtime's blob is this back end's (every blob no other back end claims is)."""
    return True


def host_blob(blob: bytes) -> bytes | None:
    """What the host executor runs for this blob: the blob (a host-reference payload, or microcode it refuses)."""
    return blob


def on_load(pte: bytes) -> None:
    """Nothing to record when a program is loaded."""


def pte_tflite(blob: bytes, pte) -> bytes | None:
    """The partition TFLite of a blob in a .pte: a host-reference payload's, or None for device microcode."""
    payload = unpack(blob)
    return payload.tflite if payload.is_reference else None


__all__ = ["PayloadError", "claims", "host_blob", "on_load", "pte_tflite", "reference", "view"]

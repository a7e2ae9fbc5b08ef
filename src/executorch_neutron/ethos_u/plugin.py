"""What the shared layers need to know of an Ethos-U delegate, for the back-end table (backends.py): how to read
its Vela payload for reports and `inspect_pte` (Vela's flags and estimate travel in the lowered module's metadata,
the reference TFLite as named data), and what the host runtime runs for it (its reference, host.py)."""

from __future__ import annotations

import hashlib

from ..core.payload import unpack
from . import host
from .options import EthosUOptions
from .payload import is_payload
from .vela_call import compile_tflite

DEVICE_ONLY = host.DEVICE_ONLY


def view(blob: bytes, meta: dict | None = None, reference: bytes | None = None) -> dict:
    """The delegate as reports show it: a Vela payload has no Neutron header (I/O as the TFLite has it, no format
    flags); `reference` is its host-reference payload when the caller found it (named data)."""
    return {"kind": "ethos-u-vela", "inputs": None, "outputs": None, "input_formats": None, "output_formats": None,
            "tflite": (lambda: unpack(reference).tflite) if reference is not None else None,
            "meta": dict(meta or {}) or None}


def claims(blob: bytes) -> bool:
    return is_payload(bytes(blob[:16]))


def host_blob(blob: bytes) -> bytes | None:
    """The host-reference payload the host executor runs for a Vela payload, or None (device-only .pte)."""
    return host.reference_for(blob)


def on_load(pte: bytes) -> None:
    """Record the Vela payloads of a program being loaded and their references (host.register_from_pte)."""
    host.register_from_pte(pte)


def pte_tflite(blob: bytes, pte) -> bytes | None:
    """The partition TFLite of a Vela payload in a deserialized .pte: its reference (named data), or None
    (device-only .pte)."""
    reference = host.references_in(pte).get(hashlib.sha256(blob).hexdigest())
    return unpack(reference).tflite if reference is not None else None


def layer_estimate(tflite: bytes, spec) -> tuple[list[dict], str]:
    """Vela's per-layer estimate of a partition TFLite, compiled again with the spec's flags."""
    options = EthosUOptions.of(spec)
    estimate = compile_tflite(tflite, options.vela_flags, "partition", options.core_clock_hz).estimate
    return [vars(layer) for layer in estimate.layers], "cycles (Vela's estimate)"

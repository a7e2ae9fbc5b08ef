"""What the shared layers need to know of a Neutron delegate, for the back-end table (backends.py): how to read
its blob for reports and `inspect_pte`, what the host runtime runs for it (the blob itself: a host-reference
payload runs in LiteRT; device microcode is refused by the executor), and its per-layer time estimate
(estimate.py, or the converter's own figures)."""

from __future__ import annotations

from ..core.payload import PayloadError, unpack
from . import estimate
from .backend import compiled_by_key


def view(blob: bytes, meta: dict | None = None, reference: bytes | None = None) -> dict:
    """The delegate as reports show it: payload kind, Neutron I/O counts and format flags, a function returning the
    host-reference TFLite (None for device microcode). Raises PayloadError for a damaged blob."""
    payload = unpack(blob)
    h = payload.header
    return {"kind": payload.kind, "inputs": h.n_inputs, "outputs": h.n_outputs,
            "input_formats": tuple(h.input_formats), "output_formats": tuple(h.output_formats),
            "tflite": (lambda: payload.tflite) if payload.is_reference else None, "meta": None}


def compiled_by(blob: bytes, named: dict[str, bytes]) -> str | None:
    """What compiled a payload of a .pte: the SDK record stored beside device microcode (NeutronBackend), "none" for
    a host-reference payload; None when a microcode payload has no record (a .pte of an older version of this
    package)."""
    record = named.get(compiled_by_key(blob))
    if record is not None:
        return record.decode(errors="replace")
    return "none (a host-reference payload, made without the eIQ Neutron SDK)" if unpack(blob).is_reference else None


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


def partition_estimate(tflite: bytes | None, meta: dict, target) -> dict | None:
    """A partition's per-layer estimate for the report: the converter's own figures when it stored them in the
    lowered module's metadata (`estimate.CONVERTER_KEY`), else estimate.py's model of its TFLite."""
    if meta.get(estimate.CONVERTER_KEY):
        return estimate.from_converter(meta[estimate.CONVERTER_KEY], target).to_dict()
    return estimate.estimate_tflite(tflite, target).to_dict() if tflite else None


def cpu_estimate(work: list[tuple[str, int, int]], target) -> dict:
    """The CPU part of a .pte's time: (operator, output elements, MACs) per CPU node (estimate.cpu_estimate)."""
    return estimate.cpu_estimate(work, target)


def layer_estimate(tflite: bytes, spec) -> tuple[list[dict], str]:
    """The per-layer estimate of a partition TFLite of a .pte (`report --model-explorer`'s cycles overlay)."""
    layers = estimate.estimate_tflite(tflite, spec.target_info).to_dict()["layers"]
    return layers, "cycles (Neutron estimate: MACs and bytes moved, see the report's notes)"


__all__ = ["PayloadError", "claims", "compiled_by", "cpu_estimate", "host_blob", "layer_estimate", "on_load", "partition_estimate", "pte_tflite",
           "reference", "view"]

"""What the shared layers need to know of a Neutron delegate, for the back-end table (backends.py): how to read
its blob for reports and `inspect_pte`, what the host runtime runs for it (the blob itself: a host-reference
payload runs in LiteRT; device microcode is refused by the executor), its per-layer time estimate (estimate.py,
or the converter's own figures) and the memory its payload needs on the device (`memory`).

Memory figures of device microcode are the words NXP's device runtime reads (ExecuTorch's
backends/nxp/runtime/NeutronBackend.cpp, `init`): word 9 the scratch size; payload version 0: word 10 the SRAM
buffer for weights prefetched from flash (`fetch_constants_to_sram`, builds with EXTERNAL_MEM); version 1: words 10
and 11 the profile and debug buffers (the top bit of word 10 is a flag), word 12 the prefetch buffer. The runtime
allocates them from the method's temp allocator on every delegate call.
"""

from __future__ import annotations

import struct

from ..core.memory import SRAM, Block
from ..core.payload import PayloadError, unpack
from ..tflite.reader import read_model
from . import estimate
from .backend import compiled_by_key


def view(blob: bytes, meta: dict | None = None, reference: bytes | None = None) -> dict:
    """The delegate as reports show it: payload kind, a one-line summary, Neutron I/O counts and format flags, a
    function returning the host-reference TFLite (None for device microcode). Raises PayloadError for a damaged
    blob."""
    payload = unpack(blob)
    h = payload.header
    summary = (f"{payload.kind}: {h.n_inputs} input(s) formats {list(h.input_formats)}, {h.n_outputs} output(s) "
               f"formats {list(h.output_formats)}")
    return {"kind": payload.kind, "summary": summary, "inputs": h.n_inputs, "outputs": h.n_outputs,
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


def on_load(pte) -> None:
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


def placement(spec) -> dict[str, str]:
    """Where the target keeps the .pte (`program`) and ExecuTorch's working memory (`working`: planned memory, the
    temp allocator, unplanned inputs and outputs): its `program_memory` and `working_memory`."""
    target = spec.target_info
    return {"program": target.program_memory, "working": target.working_memory}


def memory(blob: bytes, spec, tflite: bytes | None, name: str) -> list[Block]:
    """What a delegate payload needs on the device beside the .pte: the NPU scratch (and profile, debug and prefetch
    buffers) the microcode states, or for a host-reference payload an estimate from its TFLite; and, where the NPU
    cannot read the memory the .pte is stored in (`weight_memory` SRAM: i.MX RT700), the payload in SRAM."""
    target = spec.target_info
    payload = unpack(blob)
    if payload.is_microcode:
        blocks, prefetch = _microcode_blocks(payload, name, target.working_memory)
        weights = Block(f"NPU payload in SRAM ({name})", len(blob), SRAM,
                        "the NPU cannot read flash: microcode, weights and kernels must sit in SRAM (place the .pte "
                        "there, or compile with --fetch-constants-to-sram)")
    elif payload.is_reference:
        intermediates, constants = _tflite_bytes(payload.tflite)
        blocks, prefetch = [Block(
            f"NPU scratch ({name})", intermediates, target.working_memory, "estimate from the partition TFLite's intermediate tensors: "
            "the most bytes live at once in operator order (host-reference payload: the eIQ Neutron converter sets the "
            "device's scratch)", estimated=True, per_call=True)], False
        weights = Block(f"NPU weights in SRAM ({name})", constants, SRAM,
                        "estimate: the partition TFLite's constant tensors; the NPU cannot read flash, so they must "
                        "sit in SRAM (or be prefetched with --fetch-constants-to-sram)", estimated=True)
    else:
        return []
    return blocks + ([weights] if target.weight_memory == SRAM and not prefetch else [])


def _microcode_blocks(payload, name: str, where: str) -> tuple[list[Block], bool]:
    """The buffers the device runtime allocates per call from the temp allocator (in `where`, the target's working
    memory), from the microcode words; and whether weights are prefetched into SRAM."""
    words = struct.unpack_from(f"<{min(len(payload.microcode) // 4, 15)}I", payload.microcode)
    v1 = payload.header.version == 1
    need = 15 if v1 else 13
    if len(words) < need:
        raise PayloadError(f"microcode of {name} holds {len(words)} words, fewer than the {need} the device runtime "
                           f"reads")
    fields = [("NPU scratch", words[9], "microcode word 9")]
    if v1:
        fields += [("NPU profile buffer", words[10] & 0x7FFFFFFF, "microcode word 10"),
                   ("NPU debug buffer", words[11], "microcode word 11")]
    prefetch = words[12] if v1 else words[10]
    fields.append(("weights prefetch buffer", prefetch, f"microcode word {12 if v1 else 10} "
                                                        "(fetch_constants_to_sram)"))
    blocks = [Block(f"{what} ({name})", size, where, f"{source}; allocated per call from the temp allocator",
                    per_call=True) for what, size, source in fields if size or what == "NPU scratch"]
    return blocks, prefetch > 0


_ELEMENT_BYTES = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 9: 1, 10: 8, 16: 4}  # TensorType -> bytes


def _tflite_bytes(tflite: bytes) -> tuple[int, int]:
    """(the most bytes of intermediate tensors live at once, in operator order; bytes of constant tensors)."""
    model = read_model(tflite)
    sub = model.subgraphs[0]

    def size(index: int) -> int:
        t = sub.tensors[index]
        n = 1
        for d in (t.shape if t.shape is not None else []):
            n *= max(int(d), 1)
        return n * _ELEMENT_BYTES.get(t.type, 4)

    def stored(buffer: int) -> int:
        b = model.buffers[buffer] if 0 < buffer < len(model.buffers) else None
        return 0 if b is None else len(b.data) if b.data is not None else int(b.size or 0)

    edges = {int(i) for i in list(sub.inputs) + list(sub.outputs)}
    ops = list(sub.operators or [])
    born, last = {}, {}
    for k, op in enumerate(ops):
        for i in (int(i) for i in op.inputs if i >= 0):
            last[i] = k
        for i in (int(i) for i in op.outputs):
            born.setdefault(i, k)
            last.setdefault(i, k)
    inner = [i for i in born if i not in edges]
    peak = max((sum(size(i) for i in inner if born[i] <= k <= last[i]) for k in range(len(ops))), default=0)
    constants = sum(stored(b) for b in {int(t.buffer) for t in sub.tensors})
    return peak, constants


__all__ = ["PayloadError", "claims", "compiled_by", "cpu_estimate", "host_blob", "layer_estimate", "memory", "on_load",
           "partition_estimate", "placement", "pte_tflite", "reference", "view"]

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

from ..core.backend_row import Backend
from ..core.cpu_estimate import cpu_estimate
from ..core.memory import SRAM, Block
from ..core.payload import MICROCODE_MAGIC, REFERENCE_MAGIC, PayloadError, unpack
from ..target import NEUTRON
from ..tflite.reader import read_model
from . import estimate
from .backend import BACKEND_ID, compiled_by_key
from .npu.compile import kernel_selection_name
from .partitioner import NeutronPartitioner

#: why the host cannot run a microcode payload, and what to do (the host runtime's message)
DEVICE_ONLY = ("this .pte holds Neutron microcode for the device; lower without the eIQ Neutron SDK, or with "
               "`reference=True`, to run it on the host")

ESTIMATE_NOTE = ("Neutron estimate: a model of this package, not NXP's and not a measurement (NXP publishes no "
                 "cost model; with the eIQ Neutron SDK installed, the converter's own figures replace it)")

#: what the stated error covers and what it does not (every Neutron target's note says it)
_COVERS = ("the NPU part: its compute and its own transfers (weights from {weights}, activations), of models "
           "the NPU runs whole, as the boards timed them with int8 inputs and outputs")
_NOT_COVERED = ("not covered: the CPU part (quantize / dequantize of float inputs and outputs, operators left on "
                "the CPU: assumed per-MAC and per-element costs, no measured figure) and per-layer shares (not "
                "measured)")


def calibration_note(target) -> str:
    """How the estimate was held against NXP's published figures on the target's generation (estimate.CALIBRATIONS):
    the expected error per part, or that nothing was measured on it (a test recomputes the figures)."""
    found = estimate.calibration(target)
    covers = _COVERS.format(weights=target.weight_memory or "memory")
    if found is None:
        return (f"no measured figure for its generation ({target.generation}): nothing published was timed on a "
                f"{target.generation} NPU, so no expected error is stated; its fitted figures are another "
                f"generation's (see the figures' sources); {_NOT_COVERED}")
    figures = ", ".join(f"{what} {shown}" for _, what, _, shown in found.published)
    return (f"held against NXP's published {found.chip} latencies ({found.source}: {figures}; the "
            f"{found.generation} fit of the depthwise rate and the cost per kernel comes from them): expected error "
            f"+-{_percent(found.expected_error)} (the largest leave-one-out error of that fit) on {covers}; "
            f"{_NOT_COVERED}")


def _percent(error: float) -> str:
    return f"{100 * error:.0f}%"


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


def reference(lowered) -> bytes | None:
    """What the host runs for a lowered Neutron module: its blob when it is a host-reference payload; None for
    device microcode."""
    return host_blob(bytes(lowered.processed_bytes))


def claims(blob: bytes) -> bool:
    """Whether a delegate blob is a Neutron payload: its header parses and section 2 starts with the microcode or
    the host-reference magic."""
    try:
        return unpack(bytes(blob)).magic in (MICROCODE_MAGIC, REFERENCE_MAGIC)
    except (PayloadError, ValueError, IndexError, struct.error):
        return False


def host_blob(blob: bytes) -> bytes | None:
    """What the host executor runs for this blob: a host-reference payload itself; None for device microcode."""
    return None if unpack(blob).is_microcode else blob


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
        found = estimate.from_converter(meta[estimate.CONVERTER_KEY], target).to_dict()
    elif tflite:
        found = estimate.estimate_tflite(tflite, target).to_dict()
    else:
        return None
    return {"by": "NXP converter's figures" if found["source"] == "NXP converter" else "Neutron estimate", **found}


def pte_estimate(tflite: bytes, spec) -> dict:
    """A partition's estimate from its TFLite in a .pte (`report X.pte`): estimate.py's model, as `partition_estimate`
    makes it when the converter stored no figures of its own."""
    return partition_estimate(tflite, {}, spec.target_info)


def estimate_total(estimates: list[dict], cpu_work: list[tuple[str, int, int]], target) -> dict:
    """The partitions' estimates summed (they run one after another) plus the CPU part of the .pte's time:
    (operator, output elements, MACs) per CPU node (core/cpu_estimate.py)."""
    cycles, npu = sum(e["cycles"] for e in estimates), sum(e["inference_seconds"] for e in estimates)
    cpu = cpu_estimate(cpu_work, target)
    return {"by": estimates[0]["by"], "source": estimates[0]["source"], "formula": estimates[0]["formula"],
            "cycles": cycles, "npu_seconds": npu, **cpu, "inference_seconds": npu + cpu["cpu_seconds"],
            "core_clock_hz": estimates[0]["core_clock_hz"], "macs": sum(e["macs"] for e in estimates)}


def estimate_notes(target, total: dict) -> list[str]:
    """What the estimate is, the target's figures it used with their sources, how it was held against NXP's on the
    target's generation (its expected error per part), and a warning where the CPU part (assumed costs, not covered
    by the expected error) is most of the total."""
    notes = [f"{ESTIMATE_NOTE}: {total['formula']}", "figures: " + "; ".join(target.estimate_figures()),
             calibration_note(target)]
    cpu, whole = total.get("cpu_seconds", 0.0), total.get("inference_seconds", 0.0)
    if whole and cpu >= 0.5 * whole:
        found = estimate.calibration(target)
        claim = (f"the NPU part's +-{_percent(found.expected_error)} does not hold for this total" if found else
                 "no expected error holds for this total")
        notes.append(f"the CPU part is {1e3 * cpu:.3f} of {1e3 * whole:.3f} ms ({100 * cpu / whole:.0f}%) here: it "
                     f"rests on assumed costs per CPU operator, so {claim}")
    return notes


def intermediates(tag: str) -> tuple[str, ...]:
    """What a partition's compile step may leave in intermediates_dir beside its TFLite: the converter's console and
    its kernel-selection code."""
    return f"{tag}.converter_console.txt", kernel_selection_name(tag)


def section(meta: dict) -> dict:
    """Nothing beside the estimate and `compiled_by`: a Neutron partition has no back-end section of its own."""
    return {}


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


ROW = Backend(NEUTRON, BACKEND_ID, NeutronPartitioner, view, reference, claims, host_blob, on_load,
              device_only=DEVICE_ONLY, title="Neutron NPU", limits=lambda profile: f"constraints {profile}",
              pte_tflite=pte_tflite, layer_estimate=layer_estimate, partition_estimate=partition_estimate,
              estimate_total=estimate_total, estimate_notes=estimate_notes, pte_estimate=pte_estimate,
              section=section, memory=memory, placement=placement, compiled_by=compiled_by,
              intermediates=intermediates)

"""EthosUBackend.preprocess: partition edge program -> int8 TFLite (the shared front end) -> Vela -> payload.

Glue only: the TFLite comes from convert/ (as for Neutron), the compile step from vela_call.py, the block stream
from payload.py. With `embed_reference` (the default) the partition's TFLite also travels in the .pte as named
data (key `reference_key(payload, reference)`), packed as a host-reference payload so the host runtime can run it in
LiteRT; without it the .pte holds only what the device reads. Vela's estimate and flags go to the lowered
module's metadata (`_delegate_info_meta`), where the delegation report reads them.
"""

from __future__ import annotations

import hashlib
import time
from typing import final

from executorch.exir._serialize._named_data_store import NamedDataStore
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from torch.export import ExportedProgram

from ..compile_spec import NeutronCompileSpec
from ..convert import convert_partition
from ..core.payload import HOST_REFERENCE_META, Header, Payload
from ..core.payload import pack as pack_reference
from ..core.debug_handles import handle_map
from ..core.progress import emit
from . import payload
from .options import EthosUOptions
from .vela_call import compile_tflite


def reference_key(blob: bytes, reference: bytes) -> str:
    """The named-data key of the host reference of an Ethos-U payload: the payload's SHA-256 (it is found again from
    the payload alone: `reference_prefix`), then the reference's, since two partitions can compile to one command
    stream (a `* 10` and a `* 0.1` of equal int8 arithmetic) and keep different references."""
    return f"{reference_prefix(blob)}.{hashlib.sha256(reference).hexdigest()[:16]}"


def reference_prefix(blob: bytes) -> str:
    return payload.REFERENCE_PREFIX + hashlib.sha256(blob).hexdigest()


def vela_flags(spec: NeutronCompileSpec) -> list[str]:
    """The Vela arguments of a spec (without output dir and input path): `EthosUOptions.vela_flags`."""
    return EthosUOptions.of(spec).vela_flags


def host_payload(lowered) -> bytes | None:
    """What the host runs for a lowered module: a Neutron blob itself, an Ethos-U payload's stored reference
    (a host-reference payload), or None for a device-only Ethos-U payload."""
    blob = bytes(lowered.processed_bytes)
    if not payload.is_payload(blob):
        return blob
    store = lowered.named_data_store_output
    prefix = reference_prefix(blob)
    entry = None if store is None else next((e for k, e in store.pte_data.items() if k.startswith(prefix)), None)
    return None if entry is None else bytes(store.buffers[entry.buffer_index])


class EthosULoweringError(RuntimeError):
    """A partition cannot become an Ethos-U payload; the message says why and what to do."""


@final
class EthosUBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: list[CompileSpec]) -> PreprocessResult:
        spec, name, converted = convert_partition(edge_program, compile_specs)
        options = EthosUOptions.of(spec)
        n_in = len(converted.input_args)
        if converted.input_args != tuple(range(n_in)) or not converted.io_as_stored:
            raise EthosULoweringError(
                f"{name}: the Ethos-U runtime copies delegate arguments into the NPU's scratch as they are, but "
                f"this partition's TFLite reads them as {list(converted.input_args)} with format flags "
                f"{list(converted.input_formats)} (1: NHWC) that differ from how ExecuTorch stores them; keep "
                f"use_neutron_for_format_conversion=True (channels-last tensors need no flag for it)")
        flags = options.vela_flags
        t0 = time.perf_counter()
        out = compile_tflite(converted.tflite, flags, name, options.core_clock_hz)
        vela_seconds = time.perf_counter() - t0
        blob = payload.pack(out.raw)
        store = None
        header = Header(n_args=converted.n_args, input_formats=converted.input_formats,
                        output_formats=converted.output_formats, input_args=converted.input_args,
                        output_args=tuple(range(len(converted.output_formats))), version=0)
        reference = pack_reference(Payload.reference(header, converted.tflite))
        if options.embed_reference:
            store = NamedDataStore()
            store.add_named_data(reference_key(blob, reference), reference)
        # one entry per TFLite operator (what the host runs) plus the profile-dump entry, as for Neutron
        debug_map = handle_map(converted.debug_handles)
        emit("partition", name=name)
        meta = {"vela_flags": flags, "estimate": out.estimate.to_dict(), "embed_reference": options.embed_reference,
                "vela_seconds": vela_seconds}  # not in the .pte: the report's Python object only
        if not options.embed_reference:  # what lower()'s host check runs for the device-only payload
            meta[HOST_REFERENCE_META] = reference
        return PreprocessResult(processed_bytes=blob, debug_handle_map=debug_map,
                                data_store_output=store.get_named_data_store_output() if store else None,
                                _delegate_info_meta=meta)


_CLAIMED = "_executorch_neutron_claimed"


def claim_backend_id() -> None:
    """Make sure our delegates reach `EthosUBackend.preprocess`, whichever class of that name ExecuTorch picks.

    ExecuTorch finds a delegate's backend by class name among `BackendDetails`' subclasses (the first match in
    `to_backend`, the last in `lower_all_submodules_to_backend`), and Arm's own class
    (`executorch.backends.arm.ethosu`, loaded with ExecuTorch's Cortex-M quantizer, e.g. by an `imxrt700cm`
    lowering earlier in the same process) bears the name Arm's device runtime registers, as ours must. So every
    other class of that name gets a preprocess that hands compile specs of ours to ours and keeps its own for the
    rest. Called by EthosUPartitioner before each partitioning (Arm's module may be imported at any time before).
    """
    for cls in BackendDetails.__subclasses__():
        if cls is EthosUBackend or cls.__name__ != EthosUBackend.__name__ or getattr(cls, _CLAIMED, False):
            continue
        own = cls.preprocess

        def preprocess(edge_program, compile_specs, _own=own):
            if NeutronCompileSpec.written_by_us(compile_specs):
                return EthosUBackend.preprocess(edge_program, compile_specs)
            return _own(edge_program, compile_specs)

        cls.preprocess = staticmethod(preprocess)
        setattr(cls, _CLAIMED, True)


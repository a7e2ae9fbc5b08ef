"""NeutronBackend.preprocess: partition edge program -> int8 TFLite -> NPU compile step -> delegate payload.

Glue only: the graph walk lives in convert/ (shared with the Ethos-U back end), the compile step in npu/, the blob
format in payload/. A device-microcode payload gets one named-data entry in the .pte beside it, `COMPILED_BY_PREFIX
+ sha256(blob)`: the SDK version and entry point that compiled it (a few dozen bytes the device runtime never
reads), which `report` shows: a .pte compiled by a newer SDK may use kernels an older board firmware lacks.
"""

from __future__ import annotations

import hashlib
from typing import final

from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir._serialize._named_data_store import NamedDataStore
from torch.export import ExportedProgram

from ..core.progress import emit
from .npu import compile_partition
from ..core.debug_handles import handle_map
from ..core.payload import HOST_REFERENCE_META, Header, Payload, pack, unpack
from ..convert import convert_partition


@final
class NeutronBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: list[CompileSpec]) -> PreprocessResult:
        spec, name, converted = convert_partition(edge_program, compile_specs)
        # in the TFLite's graph order; the device path rewrites it in the NeutronGraph node's order (npu/compile.py)
        header = Header(
            n_args=converted.n_args,
            input_formats=converted.input_formats,
            output_formats=converted.output_formats,
            input_args=converted.input_args,
            output_args=tuple(range(len(converted.output_formats))),
        )
        compiled = compile_partition(converted.tflite, header, spec, name, converted.debug_handles)
        debug_map = compiled.debug_handle_map
        if debug_map is None:  # no profiling microcode: one entry per TFLite operator (what the host runs)
            debug_map = handle_map(converted.debug_handles)
        emit("partition", name=name)
        store = None
        if compiled.compiled_by:
            store = NamedDataStore()
            store.add_named_data(compiled_by_key(compiled.blob), compiled.compiled_by.encode())
        # the TFLite the NPU compile step was given, for the report's per-layer estimate, and the converter's files
        # that await a directory (LoweringResult.save): not in the .pte
        meta = {"tflite": bytes(converted.tflite), "compiled_by": compiled.compiled_by,
                "converter_files": dict(compiled.files)}
        if not unpack(compiled.blob).is_reference:  # microcode: lower()'s host check runs the TFLite the SDK was given
            meta[HOST_REFERENCE_META] = pack(Payload.reference(header, converted.tflite))
        return PreprocessResult(processed_bytes=compiled.blob, debug_handle_map=debug_map,
                                data_store_output=store.get_named_data_store_output() if store else None,
                                _delegate_info_meta=meta)


COMPILED_BY_PREFIX = "neutron.compiled_by."


def compiled_by_key(blob: bytes) -> str:
    """The named-data key under which a .pte records what compiled the microcode payload `blob`."""
    return COMPILED_BY_PREFIX + hashlib.sha256(bytes(blob)).hexdigest()


# The delegate id ExecuTorch stores in the .pte is the backend class's name; everything else reads it from here
# (the host library registers the id runtime/bridge.py passes it: tests/test_backend.py).
BACKEND_ID = NeutronBackend.__name__

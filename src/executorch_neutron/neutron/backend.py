"""NeutronBackend.preprocess: partition edge program -> int8 TFLite -> NPU compile step -> delegate payload.

Glue only: the graph walk lives in convert/ (shared with the Ethos-U back end), the compile step in npu/, the blob
format in payload/.
"""

from __future__ import annotations

from typing import final

from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from torch.export import ExportedProgram

from ..core.progress import emit
from .npu import compile_partition
from ..core.debug_handles import handle_map
from ..core.payload import Header
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
        # the TFLite the NPU compile step was given, for the report's per-layer estimate (not in the .pte)
        return PreprocessResult(processed_bytes=compiled.blob, debug_handle_map=debug_map,
                                _delegate_info_meta={"tflite": bytes(converted.tflite)})


# The delegate id ExecuTorch stores in the .pte is the backend class's name; everything else reads it from here
# (the host library registers the id runtime/bridge.py passes it: tests/test_backend.py).
BACKEND_ID = NeutronBackend.__name__

"""NeutronBackend.preprocess: partition edge program -> int8 TFLite -> NPU compile step -> delegate payload.

Glue only: the converter lives in tflite/, the compile step in npu/, the blob format in payload/.
"""

from __future__ import annotations

from pathlib import Path
from typing import final

from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from torch.export import ExportedProgram

from .atomic import write_bytes
from .compile_spec import NeutronCompileSpec
from .exported import partition_tag
from .progress import emit
from .npu import compile_partition
from .npu.profile_map import handle_map
from .ops.registry import CheckContext
from .payload import Header
from .convert import convert_program


@final
class NeutronBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: list[CompileSpec]) -> PreprocessResult:
        spec = NeutronCompileSpec.from_compile_specs(compile_specs)
        name = partition_tag(edge_program)
        ctx = CheckContext.for_program(spec, edge_program)
        converted = convert_program(edge_program, ctx, name)
        if spec.intermediates_dir:
            write_bytes(Path(spec.intermediates_dir) / f"{name}.tflite", converted.tflite)
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
        return PreprocessResult(processed_bytes=compiled.blob, debug_handle_map=debug_map)


# The delegate id ExecuTorch stores in the .pte is the backend class's name; everything else reads it from here
# (the host library registers the id runtime/bridge.py passes it: tests/test_backend.py).
BACKEND_ID = NeutronBackend.__name__

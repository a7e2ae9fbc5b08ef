"""NeutronBackend.preprocess: partition edge program -> int8 TFLite -> NPU compile step -> delegate payload.

Glue only: the converter lives in tflite/, the compile step in npu/, the blob format in payload/.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import final

from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from torch.export import ExportedProgram

from .atomic import write_bytes
from .compile_spec import NeutronCompileSpec
from .npu import compile_partition
from .ops.registry import CheckContext
from .payload import Header
from .tflite.convert import convert_program


def partition_name(program: ExportedProgram) -> str:
    """The delegation tag of the partition (the name its intermediates are written under).

    Read from the computing nodes only: an input placeholder keeps the meta of the node that produced it, which
    may be the output of another partition (and carry that partition's tag).
    """
    tags = Counter(n.meta.get("delegation_tag") for n in program.graph.nodes
                   if n.op == "call_function" and n.meta.get("delegation_tag"))
    return tags.most_common(1)[0][0] if tags else "neutron_partition"


@final
class NeutronBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: list[CompileSpec]) -> PreprocessResult:
        spec = NeutronCompileSpec.from_compile_specs(compile_specs)
        name = partition_name(edge_program)
        ctx = CheckContext.for_program(spec, edge_program)
        converted = convert_program(edge_program, ctx, name)
        if spec.intermediates_dir:
            write_bytes(Path(spec.intermediates_dir) / f"{name}.tflite", converted.tflite)
        header = Header(
            n_args=converted.n_args,
            input_formats=converted.input_formats,
            output_formats=converted.output_formats,
            input_args=converted.input_args,
            output_args=tuple(range(len(converted.output_formats))),
        )
        compiled = compile_partition(converted.tflite, header, spec, name)
        debug_map = compiled.debug_handle_map
        if debug_map is None:
            debug_map = {i: handles for i, handles in enumerate(converted.debug_handles)}
            debug_map[len(debug_map)] = ()
        return PreprocessResult(processed_bytes=compiled.blob, debug_handle_map=debug_map)

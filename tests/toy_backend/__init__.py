"""A toy back end, for tests only: it proves the back-end seam (ARCHITECTURE.md "Adding a back end").

It lives outside `src/` and joins through the public plugin API alone: one target (`toy-npu`, kind "toy"), one
row given to `executorch_neutron.backends.register`. Its preprocess turns a partition into the int8 TFLite of the
shared front end (`convert.convert_partition`) and stores it as a host-reference payload (core/payload.py) behind
its own 8-byte magic, so its blobs are its own: `claims` tests that magic, `host_blob` strips it. No device
compiler, no estimate: what the report, `inspect_pte`, `compare` and the host runtime need comes from the row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import final

from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult

from executorch_neutron.backends import Backend, register
from executorch_neutron.convert import convert_partition
from executorch_neutron.core.debug_handles import handle_map
from executorch_neutron.core.payload import Header, Payload, pack, unpack
from executorch_neutron.partition import BasePartitioner

KIND = "toy"
MAGIC = b"TOYNPU01"


@dataclass(frozen=True)
class ToyTarget:
    """The facts the shared layers read of a target: no Cortex-M stage, nothing about MACs."""

    name: str = "toy-npu"
    soc: str = "a test double of an SoC"
    npu: str = "Toy NPU"
    cpu: str = "any CPU"
    sram_bytes: int = 256 * 1024
    notes: tuple[str, ...] = field(default=("test-only back end (tests/toy_backend)",))
    flash_bytes = None
    cortex_m = None
    transpose_form = "4d"
    kind = KIND

    def describe(self) -> str:
        return f"{self.name}: {self.soc}; NPU {self.npu} (test-only back end)"


@final
class ToyBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program, compile_specs) -> PreprocessResult:
        spec, name, converted = convert_partition(edge_program, compile_specs)
        header = Header(n_args=converted.n_args, input_formats=converted.input_formats,
                        output_formats=converted.output_formats, input_args=converted.input_args,
                        output_args=tuple(range(len(converted.output_formats))))
        blob = MAGIC + pack(Payload.reference(header, converted.tflite))
        return PreprocessResult(processed_bytes=blob, debug_handle_map=handle_map(converted.debug_handles))


class ToyPartitioner(BasePartitioner):
    backend_id = ToyBackend.__name__
    tag_prefix = "toy"


def claims(blob: bytes) -> bool:
    return bytes(blob[:len(MAGIC)]) == MAGIC


def host_blob(blob: bytes) -> bytes:
    return bytes(blob[len(MAGIC):])


def view(blob: bytes, meta=None, reference=None) -> dict:
    payload = unpack(host_blob(blob))
    h = payload.header
    return {"kind": "toy-reference", "inputs": h.n_inputs, "outputs": h.n_outputs,
            "input_formats": tuple(h.input_formats), "output_formats": tuple(h.output_formats),
            "summary": f"toy-reference: {h.n_inputs} input(s), {h.n_outputs} output(s)",
            "tflite": lambda: payload.tflite, "meta": None}


ROW = Backend(KIND, ToyBackend.__name__, ToyPartitioner, view,
              reference=lambda lowered: host_blob(bytes(lowered.processed_bytes)), claims=claims,
              host_blob=host_blob, on_load=lambda pte_file: None, title="Toy NPU (test double)",
              limits=lambda profile: "the toy's limits (the converter's structural ones)",
              pte_tflite=lambda blob, pte_file: unpack(host_blob(blob)).tflite)
TARGET = ToyTarget()


def install() -> None:
    """Register the toy back end and its target (idempotent)."""
    register(ROW, [TARGET], npu="Toy")

"""The NPU compile step: a partition's int8 TFLite -> packed delegate payload.

With the eIQ Neutron SDK installed (and `reference=False`) the TFLite goes through NXP's converter (in a child
process, see sdk_adapter.py) and the NeutronGraph node's microcode, weights and kernels are packed behind the
header. Without the SDK, or with `reference=True`, the TFLite itself is packed as a host-reference payload that
the host runtime (executorch_neutron.runtime) executes in LiteRT.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from ..compile_spec import NeutronCompileSpec
from ..payload import Header, Payload, pack
from . import sdk_adapter
from .extract import extract

logger = logging.getLogger("executorch_neutron")

HOST_REFERENCE = "host-reference"
NEUTRON_MICROCODE = "neutron-microcode"
REFERENCE_NOTICE = (
    "eIQ Neutron SDK not found: produced a host-reference .pte; install NXP's eIQ Neutron SDK (eiq_neutron_sdk) "
    "for device microcode"
)
_notice_lock = threading.Lock()
_notice_logged = False


@dataclass(frozen=True)
class CompiledPartition:
    blob: bytes  # packed payload (payload.pack)
    kind: str  # HOST_REFERENCE or NEUTRON_MICROCODE
    debug_handle_map: dict[int, tuple[int, ...]] | None = None  # kernel index -> edge debug handles (profiling)
    converter_console: str = ""  # what the converter printed (fd 1 and 2); empty on the reference path


def compile_partition(tflite: bytes, header: Header, spec: NeutronCompileSpec, name: str) -> CompiledPartition:
    """Compile one partition. `header` carries io counts, formats and argument maps; the version is set here."""
    if spec.reference or not sdk_adapter.sdk_available():
        if not spec.reference:
            _log_reference_notice_once()
        payload = Payload.reference(dataclasses.replace(header, version=0), bytes(tflite))
        return CompiledPartition(pack(payload), HOST_REFERENCE)
    return _compile_with_sdk(bytes(tflite), header, spec, name)


def _compile_with_sdk(tflite: bytes, header: Header, spec: NeutronCompileSpec, name: str) -> CompiledPartition:
    result = sdk_adapter.convert(tflite, spec.neutron_target.converter_target, sdk_adapter.converter_options(spec), name,
                                 keep_dir=spec.intermediates_dir)
    _keep_outputs(result, spec, name)
    parts = extract(result.model, header.n_inputs, header.n_outputs, name)
    payload = Payload(dataclasses.replace(header, version=parts.version), parts.microcode, parts.weights,
                      parts.kernels)
    return CompiledPartition(pack(payload), NEUTRON_MICROCODE, None, result.console)


def _keep_outputs(result: sdk_adapter.ConversionResult, spec: NeutronCompileSpec, name: str) -> None:
    """Keep the converter's files (kernel-selection code) and, with profiling, its console, one set per partition.

    Files go to `intermediates_dir`, or to the current directory when kernel-selection code was asked for
    without an intermediates directory, named `<partition>.<file name the converter chose>`.
    """
    wanted = spec.dump_kernel_selection_code or (spec.use_profiling and spec.intermediates_dir)
    if not wanted:
        return
    directory = Path(spec.intermediates_dir or ".")
    directory.mkdir(parents=True, exist_ok=True)
    prefix = sdk_adapter.safe_name(name)
    for file_name, data in result.files.items():
        (directory / f"{prefix}.{file_name}").write_bytes(data)
    if spec.use_profiling and spec.intermediates_dir:
        (directory / f"{prefix}.converter_console.txt").write_text(result.console)


def _log_reference_notice_once() -> None:
    global _notice_logged
    with _notice_lock:
        if _notice_logged:
            return
        _notice_logged = True
    logger.warning(REFERENCE_NOTICE)

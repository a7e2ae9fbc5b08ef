"""The NPU compile step: a partition's int8 TFLite -> packed delegate payload.

With the eIQ Neutron SDK installed (and `reference=False`) the TFLite goes through NXP's converter (in a child
process, see sdk_adapter.py) and the NeutronGraph node's microcode, weights and kernels are packed behind the
header. Without the SDK, or with `reference=True`, the TFLite itself is packed as a host-reference payload that
the host runtime (executorch_neutron.runtime) executes in LiteRT.

With `use_profiling` on the SDK path the converter's console becomes the kernel -> debug handle map
(profile_map.py); an SDK older than 3.2.1 is refused for it. Each microcode payload records what compiled it
(`compiled_by`: the SDK's version and entry point), which the back end stores in the .pte beside the payload.
Kernel-selection code (`dump_kernel_selection_code`) comes back as `_kernel_selection_<partition>.c`: written into
`intermediates_dir` when one is set, else kept on the result for `LoweringResult.save` to write beside the .pte;
never into the caller's working directory. On the reference path the options only the converter reads (`NeutronOptions.CONVERTER_ONLY`)
have no effect:
a warning names them instead of accepting them silently (use_profiling included: there are no NPU kernels to
profile, and the debug handle map stays one entry per TFLite operator).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ...core.atomic import write_bytes, write_text
from ...compile_spec import NeutronCompileSpec
from ...core.payload import Header, Payload, pack
from ..options import NeutronOptions
from . import profile_map, sdk_adapter
from .extract import NeutronGraphParts, extract

logger = logging.getLogger("executorch_neutron")

HOST_REFERENCE = "host-reference"
NEUTRON_MICROCODE = "neutron-microcode"
REFERENCE_NOTICE = (
    "eIQ Neutron SDK not found: produced a host-reference .pte; install NXP's eIQ Neutron SDK (eiq_neutron_sdk) "
    "for device microcode"
)
LEGACY_NOTICE = (
    "eIQ Neutron SDK {version} ships the legacy converter API (eiq_neutron_sdk.neutron_converter.convertModel), "
    "which NXP deprecates: support for eIQ Neutron SDK <= 3.2.2 will be removed; install a newer SDK "
    "(eiq_neutron_sdk.neutron_compiler)"
)
KERNEL_SELECTION_FILE = "_kernel_selection.c"  # what the converter writes into its working directory
_notice_lock = threading.Lock()
_notice_logged = False
_legacy_warned = False
_unused_warned: set[tuple[str, ...]] = set()


@dataclass(frozen=True)
class CompiledPartition:
    blob: bytes  # packed payload (payload.pack)
    kind: str  # HOST_REFERENCE or NEUTRON_MICROCODE
    debug_handle_map: dict[int, tuple[int, ...]] | None = None  # kernel index -> edge debug handles (profiling)
    converter_console: str = ""  # what the converter printed (fd 1 and 2); empty on the reference path
    compiled_by: str = ""  # what made the microcode, e.g. "eIQ Neutron SDK 3.3.0 (neutron_compiler.compileModel)"
    #: converter files not yet written anywhere (no intermediates_dir): file name -> bytes, for the caller to keep
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)


def kernel_selection_name(partition: str) -> str:
    """`_kernel_selection_<partition>.c`: the file a partition's kernel-selection code is kept in (as NXP names it)."""
    return f"_kernel_selection_{sdk_adapter.safe_name(partition)}.c"


def compile_partition(tflite: bytes, header: Header, spec: NeutronCompileSpec, name: str,
                      op_debug_handles: Sequence[tuple[int, ...]] = ()) -> CompiledPartition:
    """Compile one partition. `header` describes the TFLite's graph inputs/outputs in graph order (format flags
    and delegate argument indices); the device path rewrites it in the NeutronGraph node's order, and the
    version is set here. `op_debug_handles[i]`: the edge debug handles TFLite operator i computes (profiling)."""
    options = NeutronOptions.of(spec)
    if options.reference or not sdk_adapter.sdk_available():
        if not options.reference:
            _log_reference_notice_once()
        _warn_unused_converter_options(options)
        payload = Payload.reference(dataclasses.replace(header, version=0), bytes(tflite))
        return CompiledPartition(pack(payload), HOST_REFERENCE)
    return _compile_with_sdk(bytes(tflite), header, options, name, op_debug_handles)


def _compile_with_sdk(tflite: bytes, header: Header, options: NeutronOptions, name: str,
                      op_debug_handles: Sequence[tuple[int, ...]]) -> CompiledPartition:
    version = sdk_adapter.sdk_version()
    if options.use_profiling:
        sdk_adapter.check_profiling_supported(version)
    result = sdk_adapter.convert(tflite, options.converter_target, sdk_adapter.converter_options(options), name,
                                 keep_dir=options.intermediates_dir)
    if result.api == sdk_adapter.LEGACY_API:
        _log_legacy_notice_once(version)
    compiled_by = f"eIQ Neutron SDK {version or '(version unknown)'} ({result.api or 'unknown entry point'})"
    files = _keep_outputs(result, options, name)
    parts = extract(result.model, header.n_inputs, header.n_outputs, name)
    payload = Payload(node_header(header, parts), parts.microcode, parts.weights, parts.kernels)
    debug_map = None
    if options.use_profiling:
        debug_map = profile_map.debug_handle_map(result.console, tflite, op_debug_handles)
        if not debug_map:
            where = (f"kept in {options.intermediates_dir}" if options.intermediates_dir
                     else "set intermediates_dir to keep it")
            logger.warning(
                f"partition {name!r}: use_profiling is on but the converter's console holds no kernel list "
                f"('NeutronOperator \"subgraph_<N>\":' blocks with 'Kernels:'); the ETRecord cannot map this "
                f"partition's NPU kernels to model operators (console {where})"
            )
    return CompiledPartition(pack(payload), NEUTRON_MICROCODE, debug_map, result.console, compiled_by, files)


def node_header(graph_header: Header, parts: NeutronGraphParts) -> Header:
    """The device header: Neutron input i is the node's input i, i.e. graph input `parts.input_positions[i]`;
    its format flag and delegate argument are that graph input's (same for outputs)."""
    ins, outs = parts.input_positions, parts.output_positions
    return Header(
        n_args=graph_header.n_args,
        input_formats=tuple(graph_header.input_formats[p] for p in ins),
        output_formats=tuple(graph_header.output_formats[p] for p in outs),
        input_args=tuple(graph_header.input_args[p] for p in ins),
        output_args=tuple(graph_header.output_args[p] for p in outs),
        version=parts.version,
    )


def _keep_outputs(result: sdk_adapter.ConversionResult, options: NeutronOptions, name: str) -> dict[str, bytes]:
    """Keep the converter's files (kernel-selection code as `_kernel_selection_<partition>.c`, anything else as
    `<partition>.<name>`) and, with profiling, its console, one set per partition, in `intermediates_dir`. Without
    one, the files are returned for the caller to write beside the .pte (the console is not kept)."""
    if not (options.dump_kernel_selection_code or options.use_profiling):
        return {}
    prefix = sdk_adapter.safe_name(name)
    files = {(kernel_selection_name(name) if file_name == KERNEL_SELECTION_FILE else f"{prefix}.{file_name}"): data
             for file_name, data in result.files.items()}
    if not options.intermediates_dir:
        return files
    directory = Path(options.intermediates_dir)
    directory.mkdir(parents=True, exist_ok=True)
    for file_name, data in files.items():
        write_bytes(directory / file_name, data)
    if options.use_profiling:
        write_text(directory / f"{prefix}.converter_console.txt", result.console)
    return {}


def _warn_unused_converter_options(options: NeutronOptions) -> None:
    """Name, once per set, the converter-only options that a host-reference payload cannot honour."""
    unused = options.unused_without_converter()
    with _notice_lock:
        if not unused or unused in _unused_warned:
            return
        _unused_warned.add(unused)
    profiling = (" use_profiling: a host-reference payload has no NPU kernels to profile; the host runtime records "
                 "one event per delegate call and the debug handle map lists the partition's TFLite operators."
                 if "use_profiling" in unused else "")
    logger.warning(
        f"{', '.join(unused)}: only the eIQ Neutron converter reads {'this option' if len(unused) == 1 else 'these'}, "
        f"and this partition gets a host-reference payload, so {'it has' if len(unused) == 1 else 'they have'} no "
        f"effect.{profiling} Install the eIQ Neutron SDK (and leave reference=False) for device microcode"
    )


def _log_legacy_notice_once(version: str | None) -> None:
    global _legacy_warned
    with _notice_lock:
        if _legacy_warned:
            return
        _legacy_warned = True
    logger.warning(LEGACY_NOTICE.format(version=version or "(version unknown)"))


def _log_reference_notice_once() -> None:
    global _notice_logged
    with _notice_lock:
        if _notice_logged:
            return
        _notice_logged = True
    logger.warning(REFERENCE_NOTICE)

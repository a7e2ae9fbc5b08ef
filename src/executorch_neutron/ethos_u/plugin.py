"""What the shared layers need to know of an Ethos-U delegate, for the back-end table (backends.py): how to read
its Vela payload for reports and `inspect_pte` (Vela's flags and estimate travel in the lowered module's metadata,
the reference TFLite as named data), what the host runtime runs for it (its reference, host.py), and the memory
its payload needs on the device as Vela states it (`memory`, `placement`: the payload's scratch_size block, Vela's
"Total SRAM used", and the memory areas of Vela's configuration file)."""

from __future__ import annotations

import configparser
import hashlib
import importlib.util
import struct
from pathlib import Path

from ..core.backend_row import Backend
from ..core.cpu_estimate import cpu_estimate
from ..core.memory import DRAM, FLASH, SRAM, Block
from ..core.payload import unpack
from ..ops import registry
from ..target import ETHOS_U
from . import host
from . import payload as vela_payload
from .backend import host_payload
from .options import EthosUOptions
from .partitioner import EthosUPartitioner
from .payload import BACKEND_ID, is_payload
from .vela_call import compile_tflite

DEVICE_ONLY = host.DEVICE_ONLY
ESTIMATE_NOTE = ("Vela's estimate: Arm's Vela compiler models the Ethos-U and its memory system (the target's "
                 "system config and memory mode); it is not a measurement on the device")


def view(blob: bytes, meta: dict | None = None, reference: bytes | None = None) -> dict:
    """The delegate as reports show it: a Vela payload has no Neutron header (I/O as the TFLite has it, no format
    flags); `reference` is its host-reference payload when the caller found it (named data)."""
    return {"kind": "ethos-u-vela", "summary": "ethos-u-vela (Vela's command stream for the device)",
            "inputs": None, "outputs": None, "input_formats": None, "output_formats": None,
            "tflite": (lambda: unpack(reference).tflite) if reference is not None else None,
            "meta": dict(meta or {}) or None}


def partition_estimate(tflite: bytes | None, meta: dict, target) -> dict | None:
    """Vela's estimate of a partition, made when it compiled it (the lowered module's metadata)."""
    return {"by": "Vela's estimate", **meta["estimate"]} if meta.get("estimate") else None


def pte_estimate(tflite: bytes, spec) -> dict:
    """Vela's estimate of a partition from its reference TFLite in a .pte (`report X.pte`): compiled again with the
    delegate's flags, as the lowering compiled it."""
    options = EthosUOptions.of(spec)
    return {"by": "Vela's estimate", **_compiled(tflite, options.vela_flags, options.core_clock_hz).estimate.to_dict()}


_COMPILED: dict = {}


def _compiled(tflite: bytes, flags, core_clock_hz: float):
    """Vela's output for a partition TFLite (one compile per TFLite, flags and clock in a process: `report` asks it for
    the estimate, the memory section and Model Explorer's overlay)."""
    key = (hashlib.sha256(tflite).hexdigest(), tuple(flags), core_clock_hz)
    if key not in _COMPILED:
        _COMPILED.clear()  # keep one: a report reads one .pte
        _COMPILED[key] = compile_tflite(tflite, flags, "partition", core_clock_hz)
    return _COMPILED[key]


def estimate_total(estimates: list[dict], cpu_work, target) -> dict:
    """Vela's estimates summed over the partitions (SRAM: the largest partition's, they run one at a time); Vela
    estimates the NPU only: where the target names its CPU's figures, the CPU part (core/cpu_estimate.py) is added."""
    npu = sum(e["inference_seconds"] for e in estimates)
    total = {"by": "Vela's estimate", "cycles": sum(e["cycles"] for e in estimates), "inference_seconds": npu,
             "core_clock_hz": estimates[0]["core_clock_hz"], "sram_bytes": max(e["sram_bytes"] for e in estimates),
             "off_chip_bytes": sum(e["off_chip_bytes"] for e in estimates), "macs": sum(e["macs"] for e in estimates)}
    if getattr(target, "cpu_clock_hz", 0.0):
        cpu = cpu_estimate(cpu_work, target)
        total.update(npu_seconds=npu, **cpu, inference_seconds=npu + cpu["cpu_seconds"])
    return total


def estimate_notes(target, total: dict) -> list[str]:
    cpu = (f"the CPU part ({total['cpu_nodes']} node(s), quantize / dequantize at the I/O included) is this "
           f"package's model, not Vela's: {target.cpu_estimate_source}" if "cpu_seconds" in total else
           f"the CPU part is not estimated: {target.name}'s CPU is the integrator's (no figures for it here)")
    return [f"{ESTIMATE_NOTE}; its memory figures are in the memory section", cpu]


def section(meta: dict) -> dict:
    """The Vela arguments the partition was compiled with (without output dir and input path)."""
    return {"vela_flags": list(meta["vela_flags"])} if meta.get("vela_flags") else {}


def claims(blob: bytes) -> bool:
    return is_payload(bytes(blob[:16]))


def host_blob(blob: bytes) -> bytes | None:
    """The host-reference payload the host executor runs for a Vela payload, or None (device-only .pte)."""
    return host.reference_for(blob)


def on_load(pte) -> None:
    """Record the Vela payloads of a program being loaded (a pte.PteFile) and their references
    (host.register_from_pte)."""
    host.register_from_pte(pte)


def pte_tflite(blob: bytes, pte) -> bytes | None:
    """The partition TFLite of a Vela payload in a .pte (a pte.PteFile): its reference (named data), or None
    (device-only .pte)."""
    reference = host.references_in(pte.named_data).get(hashlib.sha256(blob).hexdigest())
    return unpack(reference).tflite if reference is not None else None


def layer_estimate(tflite: bytes, spec) -> tuple[list[dict], str]:
    """Vela's per-layer estimate of a partition TFLite, compiled again with the spec's flags."""
    options = EthosUOptions.of(spec)
    estimate = _compiled(tflite, options.vela_flags, options.core_clock_hz).estimate
    return [vars(layer) for layer in estimate.layers], "cycles (Vela's estimate)"


_PORTS = {"sram": SRAM, "dram": DRAM, "offchipflash": FLASH, "onchipflash": FLASH}


def _flag(flags: list[str], name: str) -> str:
    return next(f.split("=", 1)[1] for f in reversed(flags) if f.startswith(f"--{name}="))


def _ini(path: str) -> configparser.ConfigParser:
    """Vela's configuration file; a relative path is looked up as Vela does, under its bundled config_files."""
    found = Path(path)
    if not found.is_file():
        found = Path(importlib.util.find_spec("ethosu").submodule_search_locations[0]) / "config_files" / path
    ini = configparser.ConfigParser()
    ini.read(found)
    return ini


def _option(ini: configparser.ConfigParser, section: str, key: str) -> str:
    """`key` of an .ini section, following Vela's `inherit=` chain."""
    while section:
        if ini.has_option(section, key):
            return ini.get(section, key)
        section = ini.get(section, "inherit", fallback="")
    raise KeyError(f"{key} in {section}")


def placement(spec) -> dict[str, str]:
    """Where Vela's memory mode puts weights (`const`, read in place from the .pte: the program's place), the
    tensor arena (`arena`: ExecuTorch's working memory beside it) and its SRAM cache (`cache`), by its system
    config's AXI ports."""
    flags = EthosUOptions.of(spec).vela_flags
    ini = _ini(_flag(flags, "config"))
    system, mode = f"System_Config.{_flag(flags, 'system-config')}", f"Memory_Mode.{_flag(flags, 'memory-mode')}"
    place = {}
    for role in ("const", "arena", "cache"):
        axi = _option(ini, mode, f"{role}_mem_area").lower()
        place[role] = _PORTS.get(_option(ini, system, f"{axi}_port").lower(), DRAM)
    return {"program": place["const"], "working": place["arena"], **place}


def memory(blob: bytes, spec, tflite: bytes | None, name: str) -> list[Block]:
    """A Vela payload's memory as Vela states it: the tensor arena of the payload's scratch_size block (the device
    runtime allocates it per call from the temp allocator) and Vela's "Total SRAM used" (recompiling the reference
    TFLite the .pte embeds with the delegate's flags). The command stream and weights are read in place from the
    payload, in the .pte: `placement` puts the .pte where Vela's memory mode keeps constants."""
    blocks = vela_payload.unpack(bytes(blob))
    scratch = struct.unpack("<I", blocks["scratch_size"])[0]
    place = placement(spec)
    options = EthosUOptions.of(spec)
    mode = _flag(options.vela_flags, "memory-mode")
    sram_used = None
    if tflite is not None:
        sram_used = _compiled(tflite, options.vela_flags, options.core_clock_hz).estimate.sram_bytes
    arena_in_sram = place["arena"] == SRAM
    source = "the payload's scratch_size block (Vela's raw output); allocated per call from the temp allocator"
    if sram_used is None:
        source += "; Vela's SRAM usage is not in the .pte (compiled with --device-only: no reference TFLite to ask Vela)"
    out = [Block(f"Vela tensor arena ({name})", scratch, place["arena"], source, per_call=True,
                 counted=not (arena_in_sram and sram_used is not None))]
    if sram_used is not None:
        inside = ("it includes the tensor arena" if arena_in_sram else
                  f"the SRAM the firmware gives the NPU as its fast scratch (memory mode {mode})")
        out.append(Block(f"Vela's SRAM usage ({name})", sram_used, SRAM,
                         f"Vela's 'Total SRAM used' for the reference TFLite the .pte embeds, with the delegate's "
                         f"flags; {inside}", per_call=True))
    return out



def supported_ops() -> list[str]:
    """The Ethos-U section of SUPPORTED_OPS.md: the same table, with Vela's own limits on top (constraints.py)."""
    lines = ["## Arm Ethos-U targets (Vela)", "",
             "For `imx93`, `ethos-u55-128`, `ethos-u55-256` and `ethos-u65-256` the table above applies without "
             "the constraints marked *(Neutron only)*, and without the constraint profiles: they are Neutron's "
             "operator tables, so every row and every other constraint applies whatever `constraints=` says. Then "
             "these limits of Vela 5.2 apply (a node breaking one stays on the CPU with the reason \"<what was "
             "found>: <the rule>\"):", "",
             "| operators (edge) | Vela's rule |", "|---|---|"]
    for ops, c in registry.ADDED:
        if c.backends != frozenset({ETHOS_U}):
            continue
        ops = "<br>".join(f"`{registry.op_name(t)}`" for t in sorted(ops, key=registry.op_name))
        lines.append(f"| {ops} | {c.text} |")
    return lines + [""]

ROW = Backend(ETHOS_U, BACKEND_ID, EthosUPartitioner, view, host_payload, claims, host_blob, on_load,
              device_only=DEVICE_ONLY, title="Ethos-U NPU (Vela)", limits=lambda profile: "Vela's limits",
              pte_tflite=pte_tflite, layer_estimate=layer_estimate, partition_estimate=partition_estimate,
              estimate_total=estimate_total, estimate_notes=estimate_notes, pte_estimate=pte_estimate,
              section=section, memory=memory, placement=placement, supported_ops=supported_ops)

"""NPU targets: the hardware facts the partitioner, converter and report rely on.

A target is data, not code: one frozen `NeutronTarget` per supported SoC with an eIQ Neutron NPU, one frozen
`EthosUTarget` per Arm Ethos-U configuration compiled by Vela (`kind` says which back end lowers for it). Facts come
from NXP's and Arm's public documents (eIQ Neutron SDK and SoC reference manuals, Vela's bundled vela.ini); fields
marked *inferred* in `notes` are defaults a user can override by building their own target and passing it where a
target name is accepted.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace

#: The back-end kinds (`target.kind`): which back end lowers for a target; every other module takes them from here.
NEUTRON = "neutron"
ETHOS_U = "ethos-u"
#: each kind's NPU as reports, reasons and errors name it (the one owner of that name); `register_target` adds one
KIND_NAMES: dict[str, str] = {NEUTRON: "Neutron", ETHOS_U: "Ethos-U"}
BACKEND_KINDS = (NEUTRON, ETHOS_U)  # the built-in kinds, in the order their limits are registered


@dataclass(frozen=True)
class NeutronTarget:
    name: str
    soc: str
    npu: str
    subsystem: bool  # Neutron-S (own controller) vs Neutron-C (driven by the MCU core)
    num_units: int
    num_pipes: int
    num_macs: int  # channel-alignment unit of the operator constraints
    hw_version: str  # "N1" or "N3"
    sram_bytes: int  # on-chip SRAM usable for weights and activations (an estimate)
    cpu: str
    upstream_supported: bool  # supported by NXP's converter in upstream ExecuTorch
    notes: tuple[str, ...] = field(default_factory=tuple)
    # The Cortex-M core that runs what the NPU does not as int8 CMSIS-NN kernels (ExecuTorch's Cortex-M backend,
    # `cortex-m33`), or None: leftovers run as ExecuTorch's portable (float) kernels.
    cortex_m: str | None = None
    # The target name the eIQ Neutron converter knows, when it differs from `name` (imxrt700cm -> imxrt700).
    converter_name: str | None = None
    # The figures of the per-layer estimate (neutron/estimate.py); `estimate_sources` says where each comes from
    # ("assumed" where nothing is published): override them with dataclasses.replace(target, ...).
    npu_clock_hz: float = 0.0
    activation_bytes_per_cycle: float = 0.0  # NPU <-> the memory holding activations (SRAM / TCM)
    weight_bytes_per_cycle: float = 0.0  # NPU <- the memory holding weights (`weight_memory`)
    weight_memory: str = ""
    # a depthwise convolution's MACs per cycle on each unit: it does not spread over the pipes (the N3-64's 8 pipes
    # and the N1-16's 2 give the same fitted rate per unit, 4x apart per pipe: benchmarks/neutron_estimate.py)
    depthwise_macs_per_unit: float = 0.0
    layer_cycles: float = 0.0  # the fixed cost of each NPU kernel (launch, configuration, pipeline fill)
    # the CPU part of a .pte (quantize / dequantize at its inputs and outputs, operators left on the CPU)
    cpu_clock_hz: float = 0.0
    cpu_cycles_per_mac: float = 0.0
    cpu_cycles_per_element: float = 0.0  # a float <-> int8 conversion or an elementwise operator, per element
    estimate_sources: tuple[tuple[str, str], ...] = ()
    # The memory section (report/memory.py): on-chip flash (None: not published, or the board's external flash),
    # where the .pte is stored and read in place, and where ExecuTorch's working memory (planned buffers, temp
    # allocator, unplanned inputs and outputs) lives.
    flash_bytes: int | None = None
    program_memory: str = "flash"
    working_memory: str = "SRAM"
    kind = NEUTRON  # the back end that lowers for this target (class attribute, not a field)
    # the activation precisions the NPU computes (NeutronQuantizer's `activations`; int8 weights in each case).
    # int8 only on every Neutron target, imx95 included: NXP's release in the executorch 1.5.1 wheel
    # (backends/nxp, read for facts) quantizes with torch.int8 specs only (quantizer/neutron_quantizer.py,
    # patterns.py), its activation support checks accept int8/uint8 inputs and outputs only
    # (backend/neutron_operator_support.py: activation_supported_on_target), and its sources name no imx95 int16
    # capability; its TFLite type tables list INT16 as a tensor type, not as a Neutron kernel type.
    activation_dtypes = ("int8",)

    @property
    def macs_per_cycle(self) -> int:
        return self.num_units * self.num_pipes * self.num_macs

    @property
    def depthwise_macs_per_cycle(self) -> float:
        return self.num_units * self.depthwise_macs_per_unit

    @property
    def generation(self) -> str:
        """The NPU generation the estimate's fitted figures and its expected error belong to (`estimate.CALIBRATIONS`):
        the Neutron-C's hardware version (N1, N3); Neutron-S for a subsystem (own controller, TCM, data mover)."""
        return "Neutron-S" if self.subsystem else self.hw_version

    def estimate_figures(self) -> list[str]:
        """The figures of the estimate, each with its value and its source (`estimate_sources`)."""
        values = {"MACs/cycle": f"{self.macs_per_cycle}", "clock": f"{self.npu_clock_hz / 1e6:g} MHz",
                  "activations": f"{self.activation_bytes_per_cycle:g} B/cycle",
                  "weights": f"{self.weight_bytes_per_cycle:g} B/cycle from {self.weight_memory}",
                  "depthwise": f"{self.depthwise_macs_per_cycle:.3g} MACs/cycle",
                  "per kernel": f"{self.layer_cycles:.0f} cycles",
                  "CPU": f"{self.cpu_clock_hz / 1e6:g} MHz, {self.cpu_cycles_per_mac:g} cycles/MAC, "
                         f"{self.cpu_cycles_per_element:g} cycles/element"}
        return [f"{name} {values.get(name, '')} ({source})" for name, source in self.estimate_sources]

    @property
    def converter_target(self) -> str:
        """The name passed to the eIQ Neutron converter (`getNeutronTarget`)."""
        return self.converter_name or self.name

    def describe(self) -> str:
        """One line for `executorch-neutron targets`."""
        return (f"{self.name}: {self.soc}; NPU {self.npu} ({'Neutron-S subsystem' if self.subsystem else 'Neutron-C'}, "
                f"{self.hw_version}); {self.num_units} unit(s) x {self.num_pipes} pipes x {self.num_macs} MACs = "
                f"{self.macs_per_cycle} MACs/cycle; SRAM {self.sram_bytes // 1024} KiB; CPU {self.cpu}; "
                f"{'upstream' if self.upstream_supported else 'preview'}"
                + (f"; leftovers as int8 {self.cortex_m} kernels (ExecuTorch Cortex-M backend)" if self.cortex_m else ""))


#: Fitted by benchmarks/neutron_estimate.py (least squares on the log of published / estimate), per Neutron generation,
#: not per model: N3 on NXP's published i.MX RT700 (Neutron N3-64, 324 MHz) latencies, CifarNet 848 us (ExecuTorch
#: .pte), DS-CNN-S 585 us (576-595 us, TFLite Micro), MobileNetV1 0.25 128x128 2,759 us (TFLite Micro); N1 on NXP's
#: MCX N947 (Neutron N1-16, 150 MHz) MLPerf Tiny latencies, DS-CNN 3.329 ms, MobileNetV1 0.25 96x96 6.384 ms, ResNet-8
#: 6.310 ms, the anomaly-detection autoencoder 0.797 ms (eIQ model zoo, TFLite Micro). The leave-one-out error of
#: each fit is `estimate.CALIBRATIONS[generation].expected_error`.
N3_DEPTHWISE_MACS_PER_UNIT = 2.41
N3_LAYER_CYCLES = 483
N1_DEPTHWISE_MACS_PER_UNIT = 2.47
N1_LAYER_CYCLES = 5160
_FITTED_ON = "fitted on: NXP's i.MX RT700 figures for CifarNet, DS-CNN-S and MobileNetV1 0.25 128 (benchmarks/neutron_estimate.py)"
_FITTED_ON_N1 = ("fitted on: NXP's MCX N947 figures for MLPerf Tiny's DS-CNN, MobileNetV1 0.25 96, ResNet-8 and "
                 "anomaly-detection autoencoder (benchmarks/neutron_estimate.py)")
#: derived: NXP's clock setups for the MCX N94x at 150 MHz (MCUXpresso SDK, Zephyr's frdm_mcxn947 board) program 3
#: flash wait states (FMU FCTRL RWSC = 3): one read every 4 cycles; assumed 16 bytes (128 bits) per read
MCXN_FLASH_BYTES_PER_CYCLE = 4
_MCXN_FLASH_SOURCE = ("derived: NXP's 150 MHz clock setups program 3 flash wait states (FMU FCTRL RWSC = 3), one read "
                      "every 4 cycles; 16 bytes (128 bits) per read assumed; the N1 fit's leave-one-out error is least "
                      "near it (benchmarks/neutron_estimate.py)")
#: derived: NXP's MCX N94x figure, MLPerf Tiny anomaly detection (264,192 MACs) in 5.605 ms on its Cortex-M33 at
#: 150 MHz (int8 TFLite Micro): 5.605e-3 * 150e6 / 264,192 = 3.2 cycles per MAC
M33_CYCLES_PER_MAC = 3.2
_M33_MAC_SOURCE = ("derived: NXP's MCX N94x figure, anomaly detection's 264,192 MACs in 5.605 ms on the Cortex-M33 "
                   "at 150 MHz")
M33_CYCLES_PER_ELEMENT = 20
_M33_ELEMENT_SOURCE = ("assumed: ExecuTorch's portable quantize / dequantize per element on a Cortex-M33 (multiply, "
                       "round, clamp, load, store); no public figure")

TARGETS: dict[str, NeutronTarget] = {
    t.name: t
    for t in (
        NeutronTarget(
            name="imxrt700",
            soc="i.MX RT700 crossover MCU",
            npu="eIQ Neutron N3-64 (Neutron-C)",
            subsystem=False,
            num_units=1,
            num_pipes=8,
            num_macs=8,
            hw_version="N3",
            sram_bytes=7_500 * 1024,
            cpu="Cortex-M33 @ 324 MHz",
            upstream_supported=True,
            notes=(
                "over 7.5 MB on-chip SRAM; the NPU cannot read FLASH: weights that do not fit SRAM must be "
                "prefetched (fetch_constants_to_sram)",
                "num_units=1 is inferred from the N3-64 name (8 pipes x 8 MACs)",
            ),
            npu_clock_hz=324e6, activation_bytes_per_cycle=16, weight_bytes_per_cycle=16, weight_memory="SRAM",
            depthwise_macs_per_unit=N3_DEPTHWISE_MACS_PER_UNIT, layer_cycles=N3_LAYER_CYCLES,
            cpu_clock_hz=324e6, cpu_cycles_per_mac=M33_CYCLES_PER_MAC, cpu_cycles_per_element=M33_CYCLES_PER_ELEMENT,
            estimate_sources=(
                ("MACs/cycle", "NXP's simulator config for the target: 8 pipelines x 8 MACs"),
                ("clock", "NXP: 324 MHz, the core's and the NPU's (MCUXpresso SDK example readmes)"),
                ("activations", "assumed: one 128-bit on-chip SRAM port; no public figure"),
                ("weights", "assumed: one 128-bit SRAM port (the NPU cannot read flash: weights sit or are prefetched "
                            "in SRAM); no public figure"),
                ("depthwise", _FITTED_ON),
                ("per kernel", _FITTED_ON),
                ("CPU", f"NXP: the Cortex-M33 at 324 MHz; per MAC {_M33_MAC_SOURCE}; per element {_M33_ELEMENT_SOURCE}"),
            ),
        ),
        NeutronTarget(
            name="mcxn94x",
            soc="MCX N94x / N54x MCU",
            npu="eIQ Neutron N1-16",
            subsystem=False,
            num_units=1,
            num_pipes=2,
            num_macs=8,
            hw_version="N1",
            sram_bytes=512 * 1024,
            flash_bytes=2 * 1024 * 1024,
            cpu="dual Cortex-M33 @ 150 MHz",
            upstream_supported=False,
            notes=(
                "16 MACs/cycle, about 4.8 GOPS; the 2 pipes x 8 MACs split and the 512 KB SRAM are inferred",
                "not supported by the converter in upstream ExecuTorch: preview target",
            ),
            npu_clock_hz=150e6, activation_bytes_per_cycle=8, weight_bytes_per_cycle=MCXN_FLASH_BYTES_PER_CYCLE,
            weight_memory="flash", depthwise_macs_per_unit=N1_DEPTHWISE_MACS_PER_UNIT, layer_cycles=N1_LAYER_CYCLES,
            cpu_clock_hz=150e6, cpu_cycles_per_mac=M33_CYCLES_PER_MAC, cpu_cycles_per_element=M33_CYCLES_PER_ELEMENT,
            estimate_sources=(
                ("MACs/cycle", "NXP: 16 MACs/cycle, about 4.8 GOPS"),
                ("clock", "NXP: 150 MHz; 16 MACs x 2 ops x 150 MHz = 4.8 GOPS"),
                ("activations", "assumed: one 64-bit SRAM port; no public figure"),
                ("weights", _MCXN_FLASH_SOURCE),
                ("depthwise", _FITTED_ON_N1),
                ("per kernel", _FITTED_ON_N1 + "; about 10x the N3 figure: what a kernel costs on the N1 beyond its "
                               "MACs and bytes (launch and configuration by the Cortex-M33, first flash reads), not "
                               "measured apart"),
                ("CPU", f"NXP: the Cortex-M33 at 150 MHz; per MAC {_M33_MAC_SOURCE}; per element {_M33_ELEMENT_SOURCE}"),
            ),
        ),
        NeutronTarget(
            name="imx95",
            soc="i.MX 95 applications processor",
            npu="eIQ Neutron-S (RISC-V controller, data mover, TCM)",
            subsystem=True,
            num_units=4,
            num_pipes=16,
            num_macs=16,
            hw_version="N3",
            sram_bytes=1024 * 1024,
            program_memory="DRAM",
            working_memory="DRAM",
            cpu="Cortex-A55",
            upstream_supported=False,
            notes=(
                "2 TOPS at about 1 GHz; units/pipes/MACs split and the 1 MB TCM are inferred",
                "not supported by the converter in upstream ExecuTorch: preview target",
            ),
            npu_clock_hz=1e9, activation_bytes_per_cycle=32, weight_bytes_per_cycle=8, weight_memory="DDR",
            depthwise_macs_per_unit=N3_DEPTHWISE_MACS_PER_UNIT, layer_cycles=N3_LAYER_CYCLES,
            cpu_clock_hz=1.8e9, cpu_cycles_per_mac=1.0, cpu_cycles_per_element=5,
            estimate_sources=(
                ("MACs/cycle", "derived: 2 TOPS / (2 ops x 1 GHz); the 4 units x 16 pipes x 16 MACs split is inferred"),
                ("clock", "NXP: about 1 GHz"),
                ("activations", "assumed: the NPU's TCM; no public figure"),
                ("weights", "assumed: DDR through the data mover; no public figure"),
                ("depthwise", "assumed: the N3 figure per unit (" + _FITTED_ON + "); nothing measured on a Neutron-S"),
                ("per kernel", "assumed: the N3 figure (" + _FITTED_ON + "); nothing measured on a Neutron-S"),
                ("CPU", "assumed: a Cortex-A55 at 1.8 GHz, 1 cycle per MAC (NEON), 5 cycles per element; no public "
                        "figure for ExecuTorch's kernels on it"),
            ),
        ),
    )
}



def _with_cortex_m(base: NeutronTarget, name: str, core: str) -> NeutronTarget:
    """`base` with its Cortex-M core taking the leftovers (same NPU, same converter target)."""
    return replace(base, name=name, cortex_m=core, converter_name=base.converter_target, notes=base.notes + (
        f"leftovers (what the NPU does not run) become int8 {core} kernels of ExecuTorch's Cortex-M backend "
        f"(CMSIS-NN); ops that backend lacks stay portable float kernels",
    ))


TARGETS["imxrt700cm"] = _with_cortex_m(TARGETS["imxrt700"], "imxrt700cm", "cortex-m33")


#: how an Ethos-U partition writes a rank-4 NCHW<->NHWC TRANSPOSE (convert/context.py): "4d" one rank-4 TRANSPOSE;
#: "collapsed" RESHAPE to rank 3 (the two moved axis groups merged), TRANSPOSE of the last two axes, RESHAPE back
#: (the same bytes in the same order; tflite.layout.collapsed_transpose)
TRANSPOSE_FORMS = ("4d", "collapsed")


@dataclass(frozen=True)
class EthosUTarget:
    """An Arm Ethos-U NPU as Vela compiles for it: `accelerator` is Vela's `--accelerator-config`,
    `system_config` and `memory_mode` name sections of the `vela.ini` bundled with Vela (`Arm/vela.ini`)."""

    name: str
    soc: str
    npu: str
    accelerator: str  # ethos-u55-128, ethos-u65-256, ...
    system_config: str
    memory_mode: str
    core_clock_hz: float  # the system config's core_clock (Vela's estimates use it)
    sram_bytes: int  # the memory mode's SRAM for the NPU (its arena cache); 0: not bounded by Vela's config
    cpu: str
    flash_bytes = None  # no published flash size (class attribute, not a field)
    notes: tuple[str, ...] = field(default_factory=tuple)
    # the CPU part of the estimate (core/cpu_estimate.py); 0: the CPU is the integrator's, its part is not estimated
    cpu_clock_hz: float = 0.0
    cpu_cycles_per_mac: float = 0.0
    cpu_cycles_per_element: float = 0.0
    cpu_estimate_source: str = ""
    config_ini: str = "Arm/vela.ini"  # Vela's --config: the .ini holding system_config and memory_mode
    # how layout transposes are written (TRANSPOSE_FORMS): the cheaper one by Vela's estimate where it
    # is clear (docs/ethos_u_vs_tflite.md: "collapsed" on the U55, "4d" on the U85; mixed on the U65: "4d")
    transpose_form: str = "4d"
    cortex_m = None  # leftovers stay portable kernels (no Cortex-M stage for Ethos-U targets)
    kind = ETHOS_U
    # the activation precisions the NPU computes (int8 weights in each case): Vela compiles TFLite's 16x8 operators
    activation_dtypes = ("int8", "int16")
    # no `num_macs`: the registry's `% num_macs` constraints are Neutron's (neutron/constraints.py), not checked here

    def describe(self) -> str:
        """One line for `executorch-neutron targets`."""
        return (f"{self.name}: {self.soc}; NPU {self.npu} (Arm Ethos-U, compiled by Vela); Vela config "
                f"{self.accelerator}, system {self.system_config} at {self.core_clock_hz / 1e6:.0f} MHz, memory mode "
                f"{self.memory_mode}; CPU {self.cpu}")

    @property
    def vela_flags(self) -> tuple[str, ...]:
        """The Vela arguments that select this configuration (without output dir and input path)."""
        return (f"--accelerator-config={self.accelerator}", f"--config={self.config_ini}",
                f"--system-config={self.system_config}", f"--memory-mode={self.memory_mode}",
                "--output-format=raw")


# Vela system configs and memory modes (sections of Vela's bundled Arm/vela.ini), and what they describe
_U55 = dict(system_config="Ethos_U55_High_End_Embedded", memory_mode="Shared_Sram", core_clock_hz=500e6, sram_bytes=0,
            transpose_form="collapsed")
_U65 = dict(system_config="Ethos_U65_High_End", memory_mode="Dedicated_Sram_384KB", core_clock_hz=1e9,
            sram_bytes=384 * 1024)
# ExecuTorch's Arm backend defaults for U85 (`ethosu_compile_spec`): 1 GHz, SRAM x2 (32 GB/s) + DRAM (12 GB/s),
# every tensor and the weights in SRAM (Sram_Only sets no arena cache size: Vela does not bound it)
_U85 = dict(system_config="Ethos_U85_SYS_DRAM_Mid", memory_mode="Sram_Only", core_clock_hz=1e9, sram_bytes=0)
_NOTES = {
    "ethos-u85": "Vela's U85 system with SRAM and DRAM at 1 GHz (Ethos_U85_SYS_DRAM_Mid), all data in SRAM "
                 "(Sram_Only): the defaults of ExecuTorch's Arm backend for U85",
    "ethos-u55": "Vela's U55 high-end embedded system (500 MHz, SRAM + flash) with the SRAM shared with the Cortex-M",
    "ethos-u65": "Vela's U65 high-end system (1 GHz, SRAM + DRAM) with a 384 KB SRAM dedicated to the NPU as a cache",
}

ETHOS_U_TARGETS: dict[str, EthosUTarget] = {
    t.name: t
    for t in (
        EthosUTarget(
            name="imx93", soc="i.MX 93 applications processor", npu="Arm Ethos-U65-256",
            accelerator="ethos-u65-256", **_U65, cpu="Cortex-A55 (+ Cortex-M33 that drives the NPU)",
            # i.MX 93: Cortex-A55 up to 1.7 GHz (NXP's product page); per MAC and per element: assumed, as for the
            # i.MX 95's Cortex-A55 (no public figure for ExecuTorch's portable kernels on it)
            cpu_clock_hz=1.7e9, cpu_cycles_per_mac=1.0, cpu_cycles_per_element=5,
            cpu_estimate_source="assumed: the Cortex-A55 at 1.7 GHz (NXP's figure), 1 cycle per MAC, 5 cycles per "
                                "element (no public figure for ExecuTorch's portable kernels on it)",
            notes=(
                "Ethos-U65 with 256 MACs/cycle beside a Cortex-A55 with LPDDR4: Vela's Ethos_U65_High_End (1 GHz, "
                "AXI0 SRAM, AXI1 DRAM) fits that pairing; Dedicated_Sram_384KB: weights and the tensor arena in "
                "DRAM, 384 KB of the i.MX 93's 640 KB on-chip SRAM as the NPU's fast scratch (inferred: change it "
                "with extra_flags='--memory-mode=...')",
                "the fast-scratch buffer is provided by the firmware, not by the payload",
            ),
        ),
        *(
            EthosUTarget(name=acc, soc="any SoC with this Ethos-U", npu=f"Arm {acc.replace('ethos-u', 'Ethos-U')}",
                         accelerator=acc, **config, cpu="the SoC's CPU", notes=(_NOTES[acc[:9]],))
            for acc, config in (("ethos-u55-128", _U55), ("ethos-u55-256", _U55), ("ethos-u65-256", _U65),
                                *((f"ethos-u85-{n}", _U85) for n in (128, 256, 512, 1024, 2048)))
        ),
    )
}


class UnknownTargetError(ValueError):
    pass


AnyTarget = NeutronTarget | EthosUTarget
#: targets of back ends registered through the plugin API (`register_target`), by name
REGISTERED: dict[str, object] = {}


def register_target(target, npu: str) -> None:
    """Make a target of another back end known by name (the plugin API: a back end outside this package gives its
    targets here and its row to `backends.register`). `target` is any frozen object with at least `name`, `kind`,
    `soc`, `npu`, `cpu`, `sram_bytes`, `notes` and `describe()`; `npu` is how reports and reasons name its kind's
    NPU. A name already taken is an error."""
    name = str(target.name).lower()
    if name in TARGETS or name in ETHOS_U_TARGETS or REGISTERED.get(name, target) is not target:
        raise ValueError(f"target name {name!r} is taken: pick another name for the target of kind {target.kind!r}")
    if KIND_NAMES.get(target.kind, npu) != npu:
        raise ValueError(f"target kind {target.kind!r} is already named {KIND_NAMES[target.kind]!r}, not {npu!r}")
    KIND_NAMES[target.kind] = npu
    REGISTERED[name] = target


def all_targets() -> list:
    """Every target (built-in and registered), in `all_target_names` order."""
    return [get_target(name) for name in all_target_names()]


def _natural(name: str) -> list:
    """Sort key reading the numbers in a name as numbers: ethos-u85-128 before ethos-u85-1024."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def all_target_names() -> list[str]:
    return sorted(TARGETS, key=_natural) + sorted(ETHOS_U_TARGETS, key=_natural) + sorted(REGISTERED, key=_natural)


def get_target(target: str | AnyTarget) -> AnyTarget:
    """Return the target for a name (case-insensitive) or pass a `NeutronTarget` / `EthosUTarget` through."""
    if isinstance(target, (NeutronTarget, EthosUTarget)) or (not isinstance(target, str) and hasattr(target, "kind")):
        return target
    key = str(target).strip().lower()
    found = TARGETS.get(key) or ETHOS_U_TARGETS.get(key) or REGISTERED.get(key)
    if found is None:
        close = difflib.get_close_matches(key, all_target_names(), n=1)
        raise UnknownTargetError(f"unknown target {target!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                                 + f": valid targets are {', '.join(all_target_names())}")
    return found

"""Neutron NPU targets: the hardware facts the partitioner, converter and report rely on.

A target is data, not code: one frozen `NeutronTarget` per supported SoC. Facts come from NXP's public
documents (eIQ Neutron SDK and SoC reference manuals); fields marked *inferred* in `notes` are defaults a user can
override by building their own `NeutronTarget` and passing it where a target name is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


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

    @property
    def macs_per_cycle(self) -> int:
        return self.num_units * self.num_pipes * self.num_macs

    @property
    def converter_target(self) -> str:
        """The name passed to the eIQ Neutron converter (`getNeutronTarget`)."""
        return self.converter_name or self.name


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
            cpu="Cortex-M33 @ 325 MHz",
            upstream_supported=True,
            notes=(
                "over 7.5 MB on-chip SRAM; the NPU cannot read FLASH: weights that do not fit SRAM must be "
                "prefetched (fetch_constants_to_sram)",
                "num_units=1 is inferred from the N3-64 name (8 pipes x 8 MACs)",
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
            cpu="dual Cortex-M33 @ 150 MHz",
            upstream_supported=False,
            notes=(
                "16 MACs/cycle, about 4.8 GOPS; the 2 pipes x 8 MACs split and the 512 KB SRAM are inferred",
                "not supported by the converter in upstream ExecuTorch: preview target",
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
            cpu="Cortex-A55",
            upstream_supported=False,
            notes=(
                "2 TOPS at about 1 GHz; units/pipes/MACs split and the 1 MB TCM are inferred",
                "not supported by the converter in upstream ExecuTorch: preview target",
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


class UnknownTargetError(ValueError):
    pass


def get_target(target: str | NeutronTarget) -> NeutronTarget:
    """Return the target for a name (case-insensitive) or pass a `NeutronTarget` through."""
    if isinstance(target, NeutronTarget):
        return target
    key = str(target).strip().lower()
    if key not in TARGETS:
        raise UnknownTargetError(
            f"unknown Neutron target {target!r}: valid targets are {', '.join(sorted(TARGETS))}"
        )
    return TARGETS[key]

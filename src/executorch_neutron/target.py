"""Neutron NPU targets: the hardware facts the partitioner, converter and report rely on.

A target is data, not code: one frozen `NeutronTarget` per supported SoC. Facts come from NXP's public
documents (see the project's shared FACTS.md); fields marked *inferred* in `notes` are defaults a user can
override by building their own `NeutronTarget` and passing it where a target name is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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

    @property
    def macs_per_cycle(self) -> int:
        return self.num_units * self.num_pipes * self.num_macs


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

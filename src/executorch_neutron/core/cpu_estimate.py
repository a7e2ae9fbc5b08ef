"""The CPU part of a .pte's time, for every back end's estimate: the operators left on the CPU and the quantize /
dequantize at the model's inputs and outputs, costed at the target's CPU figures (`cpu_clock_hz`,
`cpu_cycles_per_mac`, `cpu_cycles_per_element`: assumed where nothing is published; the target's estimate notes
say so). A target without a CPU clock (a bare Ethos-U configuration, whose CPU is the integrator's) gets none."""

from __future__ import annotations


def cpu_estimate(nodes, target) -> dict:
    """`nodes` are (operator, output elements, MACs) of each top-level CPU node (quantize / dequantize at the I/O
    included); cycles per node = max(MACs x cycles per MAC, elements x cycles per element)."""
    clock = getattr(target, "cpu_clock_hz", 0.0)
    cycles = sum(max(macs * target.cpu_cycles_per_mac, elements * target.cpu_cycles_per_element)
                 for _, elements, macs in nodes) if clock else 0.0
    return {"cpu_cycles": round(cycles), "cpu_seconds": cycles / clock if clock else 0.0, "cpu_clock_hz": clock,
            "cpu_nodes": len(nodes)}

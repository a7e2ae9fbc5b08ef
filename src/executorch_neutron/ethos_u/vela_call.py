"""Run Arm's Vela compiler (the `ethos-u-vela` package) in process on one partition's int8 TFLite.

`compile_tflite(tflite, flags)` writes the TFLite to a temporary directory, runs `vela.main` with `flags` plus the
output directory, `--verbose-performance` (only adds the per-layer CSV; the command stream is the same) and the
input path, and returns Vela's raw output arrays (`*_vela.npz`), its summary estimate and its per-layer estimate.
Vela prints from C++ (its `regor` compiler), so the console is captured at the file-descriptor level. An operator
Vela would leave on the CPU makes the raw writer fail; the error names each such operator with Vela's reason.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


class VelaError(RuntimeError):
    """Vela refused the partition; `cpu_ops` lists (operator, output tensor, reason) of what it would not run."""

    def __init__(self, message: str, cpu_ops: tuple = ()):
        super().__init__(message)
        self.cpu_ops = cpu_ops


@dataclass(frozen=True)
class Layer:
    """One row of Vela's per-layer estimate."""

    name: str  # the TFLite output tensor of the operator
    op: str  # Vela's operator (after its own rewrites, e.g. Conv2D + Relu)
    cycles: int
    macs: int
    target: str  # NPU or CPU


@dataclass(frozen=True)
class Estimate:
    """Vela's performance estimate of one compiled partition (a model of the hardware, not a measurement)."""

    cycles: int
    inference_seconds: float
    core_clock_hz: float
    sram_bytes: int  # SRAM used (Vela's "Total SRAM used")
    off_chip_bytes: int  # DRAM + off-chip flash used
    macs: int
    npu_ops: int
    layers: tuple[Layer, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {"cycles": self.cycles, "inference_seconds": self.inference_seconds,
                "core_clock_hz": self.core_clock_hz, "sram_bytes": self.sram_bytes,
                "off_chip_bytes": self.off_chip_bytes, "macs": self.macs, "npu_ops": self.npu_ops,
                "layers": [vars(layer) for layer in self.layers]}


@dataclass(frozen=True)
class VelaOutput:
    raw: dict  # name -> np.ndarray: the arrays of Vela's raw output
    estimate: Estimate
    console: str


#: the arrays of Vela's raw output the payload is made of (the file holds others, some as pickled objects)
RAW_KEYS = ("cmd_data", "weight_data", "scratch_shape", *(f"{io}_{k}" for io in ("input", "output")
                                                          for k in ("shape", "elem_size", "offset", "region")))

_CPU_OP = re.compile(r"Warning \(supported operators\) operator: (\S+), ofm: '([^']*)'\s*\nReason: ([^\n]*)"
                     r"(?:\n([^\n]*))?")


def cpu_operators(console: str) -> tuple[tuple[str, str, str], ...]:
    """(operator, output tensor, reason) of every operator Vela's console says it would place on the CPU."""
    out = []
    for op, ofm, reason, detail in _CPU_OP.findall(console):
        text = reason.strip()
        if detail.strip() and not detail.startswith(("Warning", "Traceback", "Info")):
            text = f"{text}: {detail.strip()}"
        out.append((op, ofm, text))
    return tuple(out)


@contextlib.contextmanager
def _captured_stdout(path: Path):
    """Send file descriptors 1 and 2 (C++ writers) and Python's `sys.stdout` / `sys.stderr` to `path` for the
    duration: Python's streams may be objects of their own (pytest's capture, a notebook, a redirect_stdout), which
    the descriptors do not reach."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(path, "wb") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        # a duplicate of the sink's descriptor shares its offset: Python's and C++'s lines interleave in order
        with os.fdopen(os.dup(sink.fileno()), "w", buffering=1, encoding="utf-8", errors="replace") as text:
            try:
                with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                    yield
            finally:
                text.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                for fd in saved:
                    os.close(fd)


def _kib(value: str) -> int:
    return int(round(float(value) * 1024))


def _estimate(out_dir: Path, stem: str, core_clock_hz: float) -> Estimate:
    summary_path = next(out_dir.glob(f"{stem}_summary_*.csv"))
    with open(summary_path, newline="") as f:
        s = next(csv.DictReader(f))
    layers = []
    per_layer = out_dir / f"{stem}_per-layer.csv"
    if per_layer.is_file():
        with open(per_layer, newline="") as f:
            for row in csv.DictReader(f):
                layers.append(Layer(row["Name"], row["NNG Operator"], int(float(row["Op Cycles"])),
                                    int(float(row["MAC Count"])), row["Target"]))
    clock = float(s.get("core_clock") or core_clock_hz)
    cycles = int(float(s["cycles_total"]))
    return Estimate(cycles=cycles, inference_seconds=cycles / clock, core_clock_hz=clock,
                    sram_bytes=_kib(s["sram_memory_used"]),
                    off_chip_bytes=_kib(s["dram_memory_used"]) + _kib(s["off_chip_flash_memory_used"]),
                    macs=int(float(s["nn_macs"])), npu_ops=int(s.get("passes_after_fusing") or 0),
                    layers=tuple(layers))


def compile_tflite(tflite: bytes, flags, name: str = "partition", core_clock_hz: float = 0.0) -> VelaOutput:
    """Compile one int8 TFLite with Vela; raises VelaError naming the operators Vela would leave on the CPU."""
    from ethosu.vela import vela

    with tempfile.TemporaryDirectory(prefix="executorch_neutron_vela_") as tmp:
        tmp = Path(tmp)
        src, out_dir, log = tmp / f"{name}.tflite", tmp / "output", tmp / "console.txt"
        src.write_bytes(tflite)
        args = [*flags, f"--output-dir={out_dir}", "--verbose-performance", str(src)]
        error = None
        with _captured_stdout(log):
            try:
                code = vela.main(args)
            except BaseException as exc:  # noqa: BLE001 - Vela raises RuntimeError, SystemExit, its own errors
                error, code = exc, None
        console = log.read_text(errors="replace")
        npz = out_dir / f"{name}_vela.npz"
        if error is not None or code not in (0, None) or not npz.is_file():
            cpu = cpu_operators(console)
            if cpu:
                listed = "; ".join(f"{op} ({ofm}): {reason}" for op, ofm, reason in cpu)
                raise VelaError(f"Vela would run {len(cpu)} operator(s) of {name} on the CPU, which a raw Ethos-U "
                                f"payload cannot hold: {listed}", cpu)
            last = str(error).strip() if error is not None else console.strip().splitlines()[-1:]
            raise VelaError(f"Vela failed on {name} ({type(error).__name__ if error else f'exit {code}'}: "
                            f"{last}); check the flags {' '.join(flags)}")
        with np.load(npz, allow_pickle=False) as data:
            raw = {k: data[k] for k in RAW_KEYS}
        return VelaOutput(raw, _estimate(out_dir, name, core_clock_hz), console)

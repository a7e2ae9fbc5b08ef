"""The memory section of the bundled examples on imxrt700, imxrt700cm and imx93, next to ExecuTorch's own and
Vela's own figures.

Lowers examples/cifarnet.py, ds_cnn.py and vww_mobilenet.py (`:factory`, random calibration as
`--random-calibration` does: the example inputs and 8 random samples) for each target and prints, per model and
target: the .pte size; planned memory as the memory section reads it from the .pte, next to the
`non_const_buffer_sizes` as ExecuTorch's flatc-based reader prints the file (`_program_flatbuffer_to_json`); each
partition's NPU scratch line (Neutron: from the payload, an estimate for host-reference payloads; Ethos-U: the
payload's scratch_size block); Vela's SRAM figure in the section next to "Total SRAM used" as Vela's own command
line prints it for the same partition TFLite and flags; and the SRAM and flash totals against the target's sizes.
Then the whole section of CifarNet on each target. No pass/fail.

    python benchmarks/memory.py [--write-docs]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import _docs
from executorch.exir._serialize._flatbuffer import _program_flatbuffer_to_json

from executorch_neutron import lower
from executorch_neutron.models.loading import load_model, random_samples

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("cifarnet", "ds_cnn", "vww_mobilenet")
TARGETS = ("imxrt700", "imxrt700cm", "imx93")


def vela_printed_sram(tflite: Path, flags: list[str], out: Path) -> str:
    """'Total SRAM used' as Vela's own command line prints it for this TFLite and flags."""
    proc = subprocess.run([sys.executable, "-m", "ethosu.vela", *flags, f"--output-dir={out}", str(tflite)],
                          capture_output=True, text=True, cwd=out.parent)
    found = re.search(r"Total SRAM used\s+([\d.]+ \w+)", proc.stdout)
    return found.group(1) if found else f"(not printed: exit {proc.returncode})"


def kib(n: int | None) -> str:
    return "not known" if n is None else f"{n / 1024:.1f} KiB"


def measure(model_name: str, target: str, tmp: Path) -> tuple[list[str], str]:
    model, inputs, _ = load_model(f"{ROOT}/examples/{model_name}.py:factory")
    inter = tmp / f"{model_name}_{target}"
    with contextlib.redirect_stdout(io.StringIO()):  # Vela's Python prints would land in the figures
        result = lower(model, inputs, [inputs] + random_samples(inputs, 8), target=target, intermediates_dir=inter)
    mem = result.report.memory
    plan = json.loads(_program_flatbuffer_to_json(result.pte))["execution_plan"][0]
    planned = next(b.bytes for b in mem.program if b.what == "planned memory")
    scratch = [b for d in mem.delegates for b in d if "scratch" in b.what or "arena" in b.what]
    scratch_text = ", ".join(f"{b.bytes:,} B{' (est.)' * b.estimated}" for b in scratch) or "none"
    vela = [b for d in mem.delegates for b in d if b.what.startswith("Vela's SRAM")]
    printed = [vela_printed_sram(inter / f"{p.tag}.tflite", [f for f in result.report.partitions[0].backend["vela_flags"]],
                                 tmp / f"vela_{model_name}_{p.tag}") for p in result.report.partitions if p.backend.get("vela_flags")]
    totals = {t["where"]: t for t in mem.totals()}
    sram, flash = totals.get("SRAM"), totals.get("flash")
    row = [model_name, target, f"{mem.pte_bytes:,}", f"{planned:,}", f"{sum(plan['non_const_buffer_sizes'][1:]):,}",
           scratch_text, ", ".join(f"{b.bytes / 1024:.2f} KiB" for b in vela) or "-", ", ".join(printed) or "-",
           f"{kib(sram['required_bytes'])} of {kib(sram['available_bytes'])}" if sram else "-",
           f"{kib(flash['required_bytes'])} of {kib(flash['available_bytes'])}" if flash else "- (.pte in DRAM)"]
    return row, str(mem)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _docs.add_argument(parser)
    args = parser.parse_args(argv)
    with _docs.figures(args, "benchmarks/memory.py", "memory", "Will it fit: the memory section of the examples"):
        sections = {}
        print("| model | target | .pte bytes | planned memory (section) | ExecuTorch non_const_buffer_sizes | "
              "NPU scratch / Vela arena (section) | Vela's SRAM (section) | Vela's SRAM (Vela's CLI prints) | "
              "SRAM total / target | flash total / target |")
        print("|---|---|---:|---:|---:|---|---:|---:|---|---|")
        with tempfile.TemporaryDirectory(prefix="memory_bench_") as tmp:
            for model_name in MODELS:
                for target in TARGETS:
                    row, section = measure(model_name, target, Path(tmp))
                    print("| " + " | ".join(row) + " |")
                    if model_name == "cifarnet":
                        sections[target] = section
        for target, section in sections.items():
            print(f"\ncifarnet on {target}:\n{section}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

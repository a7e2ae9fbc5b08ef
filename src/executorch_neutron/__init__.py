"""executorch-neutron: an ExecuTorch backend for NXP eIQ Neutron NPUs.

Public API:
    NeutronQuantizer      PT2E int8 quantizer (PTQ and QAT) matching what the NPU executes
    NeutronCortexMQuantizer  one quantization pass for NPU + Cortex-M (target imxrt700cm)
    NeutronPartitioner    decides per edge node whether the NPU runs it, with a reason for every rejection
    NeutronCompileSpec    every backend option, parsed once
    lower                 one call: model -> quantized -> partitioned -> .pte (a LoweringResult)
    memory_section        what a .pte needs in SRAM and flash, line by line, with where each part lives
    auto_precision        promote the most sensitive layers (int16, else float) until the .pte reaches an SQNR
    check_budget          refuse a program over an SRAM / flash budget (BudgetError); lower(sram_budget=...) too
"""

from __future__ import annotations

import importlib

from .core import _quiet

_quiet.install()

from .compile_spec import NeutronCompileSpec
from .target import TARGETS, NeutronTarget, get_target

_LAZY = {
    "NeutronQuantizer": ".quantizer",
    "NeutronCortexMQuantizer": ".quantizer",
    "NeutronPartitioner": ".neutron.partitioner",
    "NeutronBackend": ".neutron.backend",
    "lower": ".lowering",
    "LoweringResult": ".lowering",
    "LoweringError": ".pipeline",
    "compare": ".numerics",
    "evaluate": ".evaluation.run",
    "auto_precision": ".evaluation.auto_precision",
    "check_budget": ".report.memory",
    "memory_section": ".report.memory",
    "BudgetError": ".report.memory",
}

__all__ = ["NeutronCompileSpec", "NeutronTarget", "TARGETS", "get_target", *_LAZY]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'executorch_neutron' has no attribute {name!r}")

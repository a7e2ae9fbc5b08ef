"""Import ExecuTorch's Cortex-M backend (`executorch.backends.cortex_m`, in the executorch wheel) on this machine.

The backend's quantizer and passes reuse Arm's quantizer helpers and passes, whose modules import Arm's TOSA
serializer (`tosa_serializer`) at import time for TOSA debug output only. That package is not on PyPI and the
Cortex-M path never serializes TOSA. When it is missing, `load()` installs an inert placeholder module under that
name (any attribute is an inert object; calling into it does nothing) so the imports succeed; when the real
package is installed it is used as is. Every use of the Cortex-M backend in this project goes through `load()`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

_NAME = "tosa_serializer"


class _Inert:
    """Stands for any object of the missing TOSA serializer; only reached by TOSA debug helpers."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert()

    def __call__(self, *args, **kwargs):
        return _Inert()

    def __mro_entries__(self, bases):
        return (object,)


def _placeholder() -> types.ModuleType:
    module = types.ModuleType(_NAME, "inert placeholder installed by executorch_neutron.cortex_m.wheel")

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert()

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def load() -> types.ModuleType:
    """Import and return `executorch.backends.cortex_m` (quantizer, passes, op schemas and references loaded)."""
    if _NAME not in sys.modules and importlib.util.find_spec(_NAME) is None:
        sys.modules[_NAME] = _placeholder()
    # the passes first: they import the op definitions in the order those need (operators.py alone is circular)
    for name in ("executorch.backends.cortex_m.passes.cortex_m_pass_manager",
                 "executorch.backends.cortex_m.quantizer.quantizer", "executorch.backends.cortex_m.ops.operators"):
        importlib.import_module(name)
    return importlib.import_module("executorch.backends.cortex_m")

"""The debug handle map a back end's preprocess returns (ExecuTorch stores it in the ETRecord; the Inspector joins it
with the delegate's profiling events): unit i (a device kernel, or a TFLite operator run on the host) -> the edge
debug handles it computes, plus one last key with no handles that stands for the profile dump itself."""

from __future__ import annotations

from typing import Sequence


def handle_map(per_unit: Sequence[Sequence[int]]) -> dict[int, tuple[int, ...]]:
    """{unit index: its edge debug handles} for the units in execution order, then {len: ()} (the profile dump)."""
    out = {i: tuple(handles) for i, handles in enumerate(per_unit)}
    out[len(out)] = ()
    return out

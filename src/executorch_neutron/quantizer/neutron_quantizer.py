"""`NeutronQuantizer`: the torchao PT2E quantizer whose int8 graph the Neutron converter lowers exactly.

Usage (PTQ):

    q = NeutronQuantizer(target="imxrt700")
    m = prepare_pt2e(torch.export.export(model, inputs).module(), q)
    for x in calibration: m(*x)
    m = convert_pt2e(m)

QAT is the same with `is_qat=True` and `prepare_qat_pt2e`, a few training steps, then `convert_pt2e`.
The specs are in `qconfig.py`, the per-op annotation rules in `patterns.py`; ops missing from that table stay
float (they run on the CPU).

Before annotation (`transform_for_annotation`) the ATen rewrites of `executorch_neutron.passes.PIPELINE` run, in
that one ordered list, for the quantizer's target kind, constraint profile and QAT flag (conv+bn is folded by
`prepare_pt2e` itself, or rewritten for QAT by `prepare_qat_pt2e`).
"""

from __future__ import annotations

from typing import Iterable

from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import Quantizer

from ..compile_spec import CONSTRAINT_PROFILES, DEFAULT_PROFILE
from ..target import NeutronTarget, get_target
from ..passes import PassContext, run_passes
from .patterns import ANNOTATORS, AnnotationContext, annotate_graph
from .qconfig import NeutronQConfig, make_qconfig


class NeutronQuantizer(Quantizer):
    """PT2E int8 quantizer for eIQ Neutron NPUs.

    Args:
        target: Neutron target name (`imxrt700`, `mcxn94x`, `imx95`) or a `NeutronTarget`; unknown names raise
            `UnknownTargetError` listing the valid ones.
        is_qat: annotate with fake quantization for `prepare_qat_pt2e` instead of observers.
        per_channel: per-output-channel weight scales (default); False gives one scale per weight tensor.
        observer: activation observer for PTQ: "minmax" (default; deterministic and fast) or "histogram"
            (clips outliers; slower). QAT always uses a moving-average min/max fake quantizer.
        modules_to_skip: modules whose ops stay float: module types (e.g. `nn.LayerNorm`) and/or module names
            as in `model.named_modules()` (e.g. "head" skips "head" and everything under it).
        constraints: the constraint profile the partitioner follows (`NeutronCompileSpec.constraints`; lower()
            and the recipes pass it). A rewrite into ops the profile's table lacks is not made: with
            "documented" (no rsqrt) layer norm stays one float op on the CPU instead of int8 pieces split
            between NPU and CPU. Ethos-U targets have no profiles.
    """

    def __init__(
        self,
        target: str | NeutronTarget = "imxrt700",
        is_qat: bool = False,
        per_channel: bool = True,
        observer: str = "minmax",
        modules_to_skip: Iterable[type | str] = (),
        constraints: str = DEFAULT_PROFILE,
    ) -> None:
        super().__init__()
        if constraints not in CONSTRAINT_PROFILES:
            raise ValueError(f"unknown constraints profile {constraints!r}; known: {', '.join(CONSTRAINT_PROFILES)}")
        self.constraints = constraints
        self.target: NeutronTarget = get_target(target)
        self.is_qat = is_qat
        self.qconfig: NeutronQConfig = make_qconfig(is_qat=is_qat, per_channel=per_channel, observer=observer)
        skip = tuple(modules_to_skip)
        self._skip_names = tuple(s for s in skip if isinstance(s, str))
        self._skip_types = tuple(_qualified_name(t) for t in skip if isinstance(t, type))
        if len(self._skip_names) + len(self._skip_types) != len(skip):
            raise TypeError("modules_to_skip takes module types and module names (str)")

    def __repr__(self) -> str:
        return (f"NeutronQuantizer(target={self.target.name!r}, is_qat={self.is_qat}, "
                f"per_channel={self.qconfig.per_channel}, constraints={self.constraints!r})")

    # -- Quantizer API ---------------------------------------------------------------------------------------

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return run_passes(model, PassContext(is_qat=self.is_qat, backend=self.target.kind, profile=self.constraints))

    def annotate(self, model: GraphModule) -> GraphModule:
        annotate_graph(model, AnnotationContext(qconfig=self.qconfig, skip=self._skipped))
        return model

    def validate(self, model: GraphModule) -> None:
        pass

    # -- helpers -----------------------------------------------------------------------------------------------

    @staticmethod
    def supported_ops() -> list[str]:
        """Names of the aten ops this quantizer annotates (everything else stays float)."""
        return sorted(str(op) for op in ANNOTATORS)

    def _skipped(self, node: Node) -> bool:
        if not (self._skip_names or self._skip_types):
            return False
        for name, kind in (node.meta.get("nn_module_stack") or {}).values():
            kind_name = kind if isinstance(kind, str) else _qualified_name(kind)
            if kind_name in self._skip_types:
                return True
            if any(name == s or name.startswith(s + ".") for s in self._skip_names):
                return True
        return False


def _qualified_name(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"

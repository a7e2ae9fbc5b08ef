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
from .precision import KEPT_FLOAT_META, PrecisionConfig, PrecisionError, check_precision, parse, qualified_name
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
        activations: the global precision, "int8" (default) or "int16" (int16 activations, int8 weights, where
            the target has them: `target.activation_dtypes`). Per-layer settings: `set_module_type`,
            `set_module_name`, `set_operator_type`, `set_node_name` (see `precision.py`).
        precision: per-layer settings in one value, applied after modules_to_skip: the text form
            ("head=float,type:Conv2d=int16,op:aten.softmax=float,node:conv2d_3=int8,default=int8"), "@FILE", a
            mapping of the same keys, or a `PrecisionConfig` (precision.py documents the form).
    """

    def __init__(
        self,
        target: str | NeutronTarget = "imxrt700",
        is_qat: bool = False,
        per_channel: bool = True,
        observer: str = "minmax",
        modules_to_skip: Iterable[type | str] = (),
        constraints: str = DEFAULT_PROFILE,
        activations: str = "int8",
        precision=None,
    ) -> None:
        super().__init__()
        if constraints not in CONSTRAINT_PROFILES:
            raise ValueError(f"unknown constraints profile {constraints!r}; known: {', '.join(CONSTRAINT_PROFILES)}")
        self.constraints = constraints
        self.target: NeutronTarget = get_target(target)
        self.is_qat = is_qat
        self.qconfig: NeutronQConfig = make_qconfig(is_qat=is_qat, per_channel=per_channel, observer=observer)
        self.precision = PrecisionConfig(self._supported(activations))
        skip = tuple(modules_to_skip)
        if any(not isinstance(s, (str, type)) for s in skip):
            raise TypeError("modules_to_skip takes module types and module names (str)")
        for s in skip:
            (self.set_module_name if isinstance(s, str) else self.set_module_type)(s, "float")
        self.set_precision(precision)

    def __repr__(self) -> str:
        return (f"NeutronQuantizer(target={self.target.name!r}, is_qat={self.is_qat}, "
                f"per_channel={self.qconfig.per_channel}, constraints={self.constraints!r}, "
                f"activations={self.precision.default!r})")

    # -- per-layer precision: later, more specific settings win (precision.py) ----------------------------------

    def set_precision(self, precision) -> "NeutronQuantizer":
        """Apply settings in any form `precision.parse` reads (text, "@FILE", a mapping, a PrecisionConfig)."""
        default, rules = parse(precision)
        if default is not None:
            self.set_global(default)
        for rule in rules:
            self.precision.set(rule.kind, rule.key, self._supported(rule.precision))
        return self

    def set_global(self, precision: str) -> "NeutronQuantizer":
        self.precision.default = self._supported(precision)
        return self

    def set_module_type(self, module_type: type | str, precision: str) -> "NeutronQuantizer":
        key = module_type if isinstance(module_type, str) else qualified_name(module_type)
        self.precision.set("module_type", key, self._supported(precision))
        return self

    def set_module_name(self, name: str, precision: str) -> "NeutronQuantizer":
        """`name` as in `model.named_modules()` ("head" covers "head.fc"), or a glob ("conv*")."""
        self.precision.set("module_name", name, self._supported(precision))
        return self

    def set_operator_type(self, operator, precision: str) -> "NeutronQuantizer":
        """`operator`: an ATen op (torch.ops.aten.conv2d.default) or its name ("aten.conv2d")."""
        self.precision.set("operator", str(operator), self._supported(precision))
        return self

    def set_node_name(self, name: str, precision: str) -> "NeutronQuantizer":
        """`name`: a node of the exported graph as `prepare_pt2e` sees it ("conv2d_3")."""
        self.precision.set("node", name, self._supported(precision))
        return self

    def _supported(self, precision: str) -> str:
        check_precision(precision)
        dtypes = getattr(self.target, "activation_dtypes", ("int8",))
        if precision != "float" and precision not in dtypes:
            raise PrecisionError(f"{precision} activations are not supported on {self.target.name}: its NPU "
                                 f"computes {' and '.join(dtypes)}; use {' or '.join((*dtypes, 'float'))}")
        return precision

    # -- Quantizer API ---------------------------------------------------------------------------------------

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return run_passes(model, PassContext(is_qat=self.is_qat, backend=self.target.kind, profile=self.constraints))

    def annotate(self, model: GraphModule) -> GraphModule:
        self.precision.check(model)
        mark_kept_float(model, self._skipped)
        annotate_graph(model, AnnotationContext(qconfig=self.qconfig, skip=self._skipped,
                                                precision=self.precision.of, backend=self.target.kind))
        return model

    def validate(self, model: GraphModule) -> None:
        pass

    # -- helpers -----------------------------------------------------------------------------------------------

    @staticmethod
    def supported_ops() -> list[str]:
        """Names of the aten ops this quantizer annotates (everything else stays float)."""
        return sorted(str(op) for op in ANNOTATORS)

    def _skipped(self, node: Node) -> bool:
        """The configuration keeps `node` float."""
        return self.precision.of(node) == "float"


def mark_kept_float(model: GraphModule, kept_float) -> None:
    """Tag the ops the configuration keeps float in `node.meta["custom"]` (which export and to_edge carry to the
    edge graph), so that the partitioner gives them the reason `precision.KEPT_FLOAT_REASON`."""
    for node in model.graph.nodes:
        if node.op == "call_function" and kept_float(node):
            node.meta["custom"] = {**(node.meta.get("custom") or {}), KEPT_FLOAT_META: True}

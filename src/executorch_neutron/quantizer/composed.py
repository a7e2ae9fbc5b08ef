"""One quantization pass for an SoC with a Neutron NPU and a Cortex-M core (i.MX RT700: target `imxrt700cm`).

`NeutronCortexMQuantizer` annotates a graph once, in two steps that cannot disagree:

1. `NeutronQuantizer` annotates every op it knows (LiteRT int8 semantics, what the NPU runs);
2. ExecuTorch's Cortex-M quantizer (`executorch.backends.cortex_m.quantizer`, CMSIS-NN int8 semantics) annotates
   only the nodes Neutron left float: the nodes Neutron annotated, and those the user keeps float
   (`modules_to_skip`), are marked as already matched for its pattern matcher during that step.

Neutron-annotated ops also get the "int8" mark the Cortex-M quantizer leaves on its own ops, so an op Neutron
annotated but its partitioner refuses (a 10-class softmax) still becomes a Cortex-M int8 kernel. Then every edge
between two annotated nodes is tied to the producer's output qparams
(`SharedQuantizationSpec`), so an int8 tensor crossing from an NPU partition to a Cortex-M kernel (or back) is
quantized once: no requantization at a boundary unless an op itself fixes its input qparams.

Before annotation only Neutron's graph transforms run (conv1d->conv2d, div->mul, matmul->bmm, ...): the Cortex-M
ones would turn ops the NPU runs into others (mean -> avg_pool, hardswish -> clamp+mul, scalars -> tensors).
"""

from __future__ import annotations

from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import (
    FixedQParamsQuantizationSpec,
    QuantizationAnnotation,
    Quantizer,
    SharedQuantizationSpec,
)
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

from ..target import NeutronTarget
from .neutron_quantizer import NeutronQuantizer
from .patterns import is_annotated

#: node.meta key set on nodes annotated by the Cortex-M quantizer (the report's "Cortex-M" reasons use it)
QUANTIZED_BY = "executorch_neutron_quantized_by"


def _cortex_m_quantizer() -> Quantizer:
    """ExecuTorch's Cortex-M quantizer. It has observer configs only (no fake-quantize ones): under QAT its few
    annotations (ops Neutron has no kernel for, e.g. gelu) observe the fake-quantized graph during training and
    are not trained themselves; every Neutron annotation is QAT as usual."""
    from ..cortex_m import wheel

    wheel.load()
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer

    return CortexMQuantizer()


class NeutronCortexMQuantizer(Quantizer):
    """PT2E int8 quantizer for Neutron + Cortex-M: Neutron annotates first, Cortex-M what Neutron left.

    Args: the target, then `NeutronQuantizer`'s keyword options (is_qat, per_channel, observer, modules_to_skip,
    precision); what the precision configuration keeps float (modules_to_skip too) stays float for both quantizers.
    The per-layer settings (`set_global`, `set_module_type`, `set_module_name`, `set_operator_type`,
    `set_node_name`, `set_precision`) are `NeutronQuantizer`'s.
    """

    def __init__(self, target: str | NeutronTarget = "imxrt700cm", **options) -> None:
        super().__init__()
        self.neutron = NeutronQuantizer(target, **options)
        self.cortex_m = _cortex_m_quantizer()
        self.is_qat = self.neutron.is_qat

    def __repr__(self) -> str:
        return f"NeutronCortexMQuantizer({self.neutron!r})"

    @property
    def precision(self):
        return self.neutron.precision

    # the per-layer settings: NeutronQuantizer's (its precision configuration is the one both steps follow)
    def set_global(self, precision: str) -> "NeutronCortexMQuantizer":
        self.neutron.set_global(precision)
        return self

    def set_module_type(self, module_type, precision: str) -> "NeutronCortexMQuantizer":
        self.neutron.set_module_type(module_type, precision)
        return self

    def set_module_name(self, name: str, precision: str) -> "NeutronCortexMQuantizer":
        self.neutron.set_module_name(name, precision)
        return self

    def set_operator_type(self, operator, precision: str) -> "NeutronCortexMQuantizer":
        self.neutron.set_operator_type(operator, precision)
        return self

    def set_node_name(self, name: str, precision: str) -> "NeutronCortexMQuantizer":
        self.neutron.set_node_name(name, precision)
        return self

    def set_precision(self, precision) -> "NeutronCortexMQuantizer":
        self.neutron.set_precision(precision)
        return self

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return self.neutron.transform_for_annotation(model)

    def annotate(self, model: GraphModule) -> GraphModule:
        from executorch.backends.cortex_m.quantizer.pattern_matcher import PatternMatcher

        self.neutron.annotate(model)
        neutron_nodes = {n for n in model.graph.nodes if is_annotated(n)}
        for n in neutron_nodes:
            _mark_quantized_for_cortex_m(n)
        # The Cortex-M pattern matcher skips nodes already matched; its shared-qspec step skips annotated ones.
        # Nodes the user keeps float get a placeholder annotation (nothing quantized) for the time of the step.
        skipped = [n for n in model.graph.nodes if n not in neutron_nodes and self.neutron._skipped(n)]
        for n in skipped:
            n.meta[Q_ANNOTATION_KEY] = QuantizationAnnotation(_annotated=True)
        for n in neutron_nodes.union(skipped):
            n.meta[PatternMatcher.Q_PATTERN_MATCHED_KEY] = True
        self.cortex_m.annotate(model)
        for n in skipped:
            del n.meta[Q_ANNOTATION_KEY]
        for n in model.graph.nodes:
            n.meta.pop(PatternMatcher.Q_PATTERN_MATCHED_KEY, None)
            if is_annotated(n) and n not in neutron_nodes:
                n.meta[QUANTIZED_BY] = "cortex_m"
        _keep_float_io(model, set(skipped))
        share_boundary_qparams(model)
        return model

    def validate(self, model: GraphModule) -> None:
        pass


def _keep_float_io(model: GraphModule, kept_float: set) -> None:
    """The Cortex-M quantizer quantizes the model's inputs and outputs (placeholders, the output node) whatever reads
    or gives them: an output a kept-float op gives, and an input only kept-float ops read, stay float."""
    for node in model.graph.nodes:
        ann = node.meta.get(Q_ANNOTATION_KEY)
        if ann is None:
            continue
        if node.op == "output":
            for producer in [p for p in ann.input_qspec_map if p in kept_float]:
                del ann.input_qspec_map[producer]
        elif node.op == "placeholder" and node.users and all(u in kept_float for u in node.users):
            ann.output_qspec = None


def _mark_quantized_for_cortex_m(node: Node) -> None:
    """Record on a Neutron-annotated op what the Cortex-M quantizer records on its own: "this op is int8".

    The Cortex-M passes fold Q/DQ into an op (and so lower it to a `cortex_m::*` kernel) only when the op carries
    this mark; with it, an op Neutron annotated but its partitioner then refused (a 10-class softmax, ...) still
    becomes an int8 Cortex-M kernel when that backend has one.
    """
    from executorch.backends.arm.common.annotation_meta import ArmAnnotationInfo

    if node.op == "call_function":
        custom = node.meta.get("custom", {})
        custom[ArmAnnotationInfo.CUSTOM_META_KEY] = ArmAnnotationInfo(quantized=True)
        node.meta["custom"] = custom


def share_boundary_qparams(model: GraphModule) -> None:
    """Tie each annotated input edge to its producer's observed output, so a tensor has one set of qparams.

    A producer without an output spec (an inner node of a fused pattern), a consumer whose input spec is fixed
    or already shared, and weights/biases (get_attr producers are never annotated) are left alone.
    """
    for node in model.graph.nodes:
        if not is_annotated(node):
            continue
        ann = node.meta[Q_ANNOTATION_KEY]
        for producer, spec in list(ann.input_qspec_map.items()):
            if spec is None or isinstance(spec, (SharedQuantizationSpec, FixedQParamsQuantizationSpec)):
                continue
            if not is_annotated(producer) or producer.meta[Q_ANNOTATION_KEY].output_qspec is None:
                continue
            ann.input_qspec_map[producer] = SharedQuantizationSpec(producer)

"""The neutral base partitioner: tags the edge nodes an NPU runs, grouping them into partitions with int8
boundaries. It knows no back end: each back end subclasses `BasePartitioner` in its own folder, setting the delegate
id its backend class bears (`backend_id`) and the partition tag prefix (`tag_prefix`); which constraints apply is
the registry's business (`Constraint.applies` with the target's kind).

Each supported compute node goes to the NPU together with the dequantize nodes of its inputs and the quantize
nodes of its output, so a partition takes and returns int8 tensors. A partitioner must not change the graph, so
a dequantize node shared by an NPU consumer and a CPU consumer cannot be split: the NPU consumer then stays on the
CPU too, with that reason (torchao's convert_pt2e already gives every consumer its own dequantize; sharing only
appears when ExecuTorch decomposes an op after quantization). Partitions made only of no-op nodes (views,
clones) are not created unless the custom option `allow_noop_partitions` is set; a squeeze or unsqueeze counts
as work (registry entries with `alone`), as in NXP's release. Every rejected node keeps its
reason in `self.rejections` (and in the delegation report).

Ops kept from decomposition (`ops_to_not_decompose`) are the registry entries' `preserve` ops: "always" (linear:
its weights stay one constant operand; the CPU has linear.out too) and "if_delegated" (prelu, hardswish,
upsample_*: kept only for nodes the NPU will take, since the CPU runtime has no kernel for prelu and hardswish, so
a node the NPU refuses must be decomposed).
"""

from __future__ import annotations

import logging
from typing import Sequence

import executorch.kernels.quantized  # noqa: F401  (CPU out variants of quantize/dequantize: to_executorch needs them)
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data
from torch.export import ExportedProgram
from torch.fx import Node
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from ..core import qdq, return_types
from ..compile_spec import NeutronCompileSpec
from ..ops import registry
from ..ops.args import NodeArgs
from ..ops.fusion import result_node
from ..ops.registry import CheckContext
from ..core.progress import emit
from .support import Rejection, decide, decide_aten, is_compute, resolve_excluded

# to_executorch of a program whose forward() returns torch.return_types.* (median, max, topk) needs their pytree
# names, whatever flow built it (lower(), the recipes, to_edge_transform_and_lower with this partitioner): idempotent
return_types.install()

log = logging.getLogger("executorch_neutron")


class _Support(OperatorSupportBase):
    def __init__(self, supported: set[Node]):
        self.supported = supported

    def is_node_supported(self, submodules, node: Node) -> bool:
        return node in self.supported


class BasePartitioner(Partitioner):
    backend_id: str  # the delegate's backend id: the class name of the back end's BackendDetails (set by a subclass)
    tag_prefix: str  # partition tags: <tag_prefix>_0, <tag_prefix>_1, ...

    def __init__(self, spec: NeutronCompileSpec | Sequence[CompileSpec] | None = None, **options) -> None:
        spec = NeutronCompileSpec.coerce(spec, **options)
        # one spelling of each excluded operator (the edge name), whichever way the user wrote it, so that every
        # flow (lower(), the recipes, the plain ExecuTorch one) stores the same compile spec in the .pte
        self.compile_spec = spec.replace(operators_not_to_delegate=resolve_excluded(spec.operators_not_to_delegate))
        registry.validate_delegation_options(self.compile_spec.custom_delegation_options)
        self.delegation_spec = DelegationSpec(self.backend_id, self.compile_spec.to_compile_specs())
        self.rejections: list[Rejection] = []
        self.partition_tags: dict[str, list[str]] = {}
        # ops kept from decomposition only when delegated (prelu, ...): why they were not, by ATen node name
        self._refused_before_decomposition: dict[str, Rejection] = {}

    def ops_to_not_decompose(self, ep: ExportedProgram):
        ctx = CheckContext.for_program(self.compile_spec, ep)
        always, if_delegated = registry.preserved_ops("always"), registry.preserved_ops("if_delegated")

        def keep(node: Node) -> bool:
            if node.target not in always + if_delegated:
                return False
            entry = registry.lookup_aten(node.target)
            if entry.preserve_when is not None and not entry.preserve_when(NodeArgs(node)):
                return False  # not this entry's node: it decomposes into ops judged on their own
            if node.target in always:  # the CPU has a kernel too (linear.out): keep even when excluded
                weight = node.args[1] if len(node.args) > 1 else None
                return isinstance(weight, Node) and weight.target in qdq.ATEN_DEQUANTIZE
            rejection = decide_aten(node, ctx)  # refuses excluded operators too
            if rejection is not None:
                self._refused_before_decomposition[node.name] = Rejection(
                    rejection.node, rejection.op, f"{rejection.reason}; decomposed into CPU operators",
                    rejection.hint, rejection.npu)
            return rejection is None

        self._refused_before_decomposition = {}
        verdicts: dict = {}
        for node in ep.graph.nodes:
            if node.op == "call_function" and node.target in always + if_delegated:
                verdicts.setdefault(node.target, set()).add(keep(node))
        if all(len(v) == 1 for v in verdicts.values()):
            # every node of an op gets the same answer: preserve exactly the ops whose nodes are all kept, with no
            # per-node check, which lets ExecuTorch decompose once instead of twice (the same graph, faster)
            return [op for op, v in verdicts.items() if v == {True}], None
        return list(always + if_delegated), keep

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        gm = exported_program.graph_module
        ctx = CheckContext.for_program(self.compile_spec, exported_program)
        decisions = decide(gm.graph, ctx)
        _reject_shared_dequants(decisions, ctx.npu)
        self.rejections = list(self._refused_before_decomposition.values())
        self.rejections += [r for r in decisions.values() if r is not None]
        supported = {n for n, r in decisions.items() if r is None}
        members = set(supported)
        for node in supported:
            members.update(a for a in node.all_input_nodes if qdq.is_dq(a))
            out = result_node(node)
            members.update(u for u in out.users if qdq.is_q(u))
            if out is not node:
                members.add(out)
        members |= _requantizations(members)
        partitions = CapabilityBasedPartitioner(
            gm, _Support(members), allows_single_node_partition=True
        ).propose_partitions()

        tags: dict[str, DelegationSpec] = {}
        self.partition_tags = {}
        order = {n: i for i, n in enumerate(gm.graph.nodes)}
        for part in sorted(partitions, key=lambda p: min(order[n] for n in p.nodes)):
            nodes = list(part.nodes)
            compute = [n for n in nodes if is_compute(n)]
            if not compute:
                continue
            entries = [registry.lookup(n.target) for n in compute]
            if not ctx.allows("allow_noop_partitions") and all(e.noop and not e.alone for e in entries if e):
                for n in compute:
                    self.rejections.append(Rejection(n.name, registry.op_name(n.target),
                                                     "a partition of only no-op nodes is not worth a delegate call",
                                                     npu=ctx.npu))
                continue
            tag = f"{self.tag_prefix}_{len(tags)}"
            for n in nodes:
                n.meta["delegation_tag"] = tag
            tags[tag] = self.delegation_spec
            self.partition_tags[tag] = [n.name for n in compute]
        tag_constant_data(exported_program)
        emit("partitions", total=len(tags))
        for r in self.rejections:
            log.info(r.message())
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)


def _requantizations(members: set) -> set:
    """The dequantize -> quantize pairs that requantize an NPU result for an NPU consumer (q1 -> dq -> q2 -> dq2,
    with q1 and every reader of dq2 and dq in the partition): kept inside it, where the converter writes a TFLite
    QUANTIZE, instead of splitting the partition around a requantization on the CPU."""
    found = set()
    for dq2 in [m for m in members if qdq.is_dq(m)]:
        q2 = dq2.args[0]
        dq = q2.args[0] if isinstance(q2, Node) and qdq.is_q(q2) else None
        if dq is None or not qdq.is_dq(dq) or dq.args[0] not in members:
            continue
        if all(u in members for u in q2.users) and all(u in members or u is q2 for u in dq.users):
            found.update((dq, q2))
    return found


def _reject_shared_dequants(decisions: dict, npu: str) -> None:
    """A dequantize feeding both an NPU node and a CPU node cannot be split without changing the graph: reject its
    NPU consumers too (repeated until no such dequantize is left)."""
    changed = True
    while changed:
        changed = False
        for node, rej in list(decisions.items()):
            if rej is not None:
                continue
            for a in node.all_input_nodes:
                if not qdq.is_dq(a) or len(a.users) < 2:
                    continue
                others = [u for u in a.users if u is not node and decisions.get(u, _CPU) is not None]
                if others:
                    decisions[node] = Rejection(
                        node.name, registry.op_name(node.target),
                        f"its input {a.name} is also read by {others[0].name}, which runs on the CPU", npu=npu)
                    changed = True
                    break


_CPU = object()

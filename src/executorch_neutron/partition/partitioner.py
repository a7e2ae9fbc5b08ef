"""NeutronPartitioner: tags the edge nodes the NPU runs, grouping them into partitions with int8 boundaries.

Each supported compute node goes to the NPU together with the dequantize nodes of its inputs and the quantize
nodes of its output, so a partition takes and returns int8 tensors. Dequantize nodes shared by several
consumers are duplicated first (one per consumer), so a CPU consumer and an NPU consumer never share one.
Partitions made only of no-op nodes (views, clones) are not created. Every rejected node keeps its reason in
`self.rejections` (and in the delegation report).
"""

from __future__ import annotations

import logging
from typing import Sequence

import torch
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data
from torch.export import ExportedProgram
from torch.fx import Node
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .. import backend as _backend  # noqa: F401  (defines NeutronBackend for ExecuTorch's lookup)
from .. import qdq
from ..compile_spec import NeutronCompileSpec
from ..ops import registry
from ..ops.fusion import result_node
from ..ops.registry import CheckContext
from .support import Rejection, decide, is_compute

log = logging.getLogger("executorch_neutron")

BACKEND_ID = "NeutronBackend"
# kept from decomposition so that weights stay one constant operand of one node
_PRESERVE = (torch.ops.aten.linear.default,)


class _Support(OperatorSupportBase):
    def __init__(self, supported: set[Node]):
        self.supported = supported

    def is_node_supported(self, submodules, node: Node) -> bool:
        return node in self.supported


class NeutronPartitioner(Partitioner):
    def __init__(self, spec: NeutronCompileSpec | Sequence[CompileSpec] | None = None, **options) -> None:
        self.neutron_spec = NeutronCompileSpec.coerce(spec, **options)
        self.delegation_spec = DelegationSpec(BACKEND_ID, self.neutron_spec.to_compile_specs())
        self.rejections: list[Rejection] = []
        self.partition_tags: dict[str, list[str]] = {}

    def ops_to_not_decompose(self, ep: ExportedProgram):
        def keep(node: Node) -> bool:
            if registry.op_name(node.target).rsplit(".", 1)[0] in {
                e.replace("::", ".") for e in self.neutron_spec.operators_not_to_delegate
            }:
                return False
            weight = node.args[1] if len(node.args) > 1 else None
            return isinstance(weight, Node) and weight.target in {q._op for q in qdq.DEQUANTIZE}

        return list(_PRESERVE), keep

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        gm = exported_program.graph_module
        ctx = CheckContext.for_program(self.neutron_spec, exported_program)
        _duplicate_shared_dequants(gm.graph)
        decisions = decide(gm.graph, ctx)
        self.rejections = [r for r in decisions.values() if r is not None]
        supported = {n for n, r in decisions.items() if r is None}
        members = set(supported)
        for node in supported:
            members.update(a for a in node.all_input_nodes if qdq.is_dq(a))
            out = result_node(node)
            members.update(u for u in out.users if qdq.is_q(u))
            if out is not node:
                members.add(out)
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
            if all(registry.lookup(n.target).noop for n in compute if registry.lookup(n.target)):
                for n in compute:
                    self.rejections.append(Rejection(n.name, registry.op_name(n.target),
                                                     "a partition of only no-op nodes is not worth a delegate call"))
                continue
            tag = f"neutron_{len(tags)}"
            for n in nodes:
                n.meta["delegation_tag"] = tag
            tags[tag] = self.delegation_spec
            self.partition_tags[tag] = [n.name for n in compute]
        tag_constant_data(exported_program)
        for r in self.rejections:
            log.info(r.message())
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)




def _duplicate_shared_dequants(graph) -> None:
    """Give each consumer of a shared dequantize node its own copy (numerically identical)."""
    for node in list(graph.nodes):
        if not qdq.is_dq(node) or len(node.users) < 2:
            continue
        for user in list(node.users)[1:]:
            with graph.inserting_before(user):
                copy = graph.call_function(node.target, node.args, node.kwargs)
            copy.meta = dict(node.meta)
            user.replace_input_with(node, copy)
    graph.lint()

"""Edge pass after partitioning: CPU operators that compute on constants only are evaluated once, at lowering.

ExecuTorch's `to_edge` writes a linear as `addmm(bias, x, permute_copy(weight, [1, 0]))` (`mm` without a bias). On
the NPU the converter takes the weight as it is; a linear left on the CPU (kept float by the precision config,
refused by the NPU) would transpose its constant weight on every inference: a [10, 1024] head weight is a
10,240-element `permute_copy` in planned memory and in the CPU's time. Here every such top-level node is replaced by
its value, stored as a lifted constant of the program (ExecuTorch's own `constant_prop_pass` helpers write the
placeholder and its input spec; the constant is stored contiguous), and the constants nobody reads any more are
dropped.

Folded: an `aten` edge operator (`permute_copy`, `t_copy`, `transpose_copy`, `view_copy`, arithmetic ...) whose
tensor inputs are all parameters, buffers, lifted constants or values folded here, that returns one tensor, is
deterministic and writes nothing, and whose value is no larger than its constant inputs together (a folded `expand`
or a dequantized weight would grow the .pte; ExecuTorch likewise never folds `full`). Not folded: quantize /
dequantize (their integer tensors are what the kernels read), `cortex_m::*` and other non-`aten` kernels, delegate
calls, a value the program returns. The arithmetic is PyTorch's CPU kernels', as ExecuTorch's portable kernels
compute it; a data movement (permute, view) is exact.

The names of the folded nodes are kept in the graph module's meta (`FOLDED_META`): the delegation report drops them
from the CPU's operators (the partitioner decided on them before they were folded).
"""

from __future__ import annotations

import torch
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult

#: graph_module.meta key: the names of the top-level nodes folded into constants (read by the delegation report)
FOLDED_META = "executorch_neutron_folded_constants"


def _foldable(node: torch.fx.Node) -> bool:
    if node.op != "call_function":
        return False
    op = getattr(node.target, "_op", None)  # an edge op wraps its ATen OpOverload
    if not isinstance(op, torch._ops.OpOverload) or op.namespace != "aten":
        return False
    schema = op._schema
    if schema.is_mutable or torch.Tag.nondeterministic_seeded in op.tags or "empty" in schema.name:
        return False
    return len(schema.returns) == 1 and isinstance(schema.returns[0].type, torch.TensorType)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def fold_cpu_constants(program) -> list[str]:
    """Fold `program`'s top-level constant computations in place (see the module docstring); returns the names of
    the folded nodes, in graph order."""
    from executorch.exir.passes.constant_prop_pass import (
        create_constant_nodes_and_return_specs,
        get_constant_placeholder_dict,
    )

    graph = program.graph
    values = get_constant_placeholder_dict(program)  # placeholder -> tensor, then folded node -> tensor
    output = graph.output_node()
    folded = []
    for node in graph.nodes:
        if not _foldable(node) or output in node.users:
            continue
        inputs = node.all_input_nodes
        if not all(n in values for n in inputs):
            continue
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
        with torch.no_grad():
            value = node.target(*args, **kwargs)
        if not isinstance(value, torch.Tensor) or _nbytes(value) > sum(_nbytes(values[n]) for n in set(inputs)):
            continue
        values[node] = value.detach().clone(memory_format=torch.contiguous_format)
        folded.append(node.name)
    if not folded:
        return []
    # ExecuTorch's helpers: a lifted constant per folded value still read by a run-time node, and the erasure of
    # every constant (placeholder or folded node) that only folded nodes read
    specs = {s.arg.name: s for s in program.graph_signature.input_specs}
    specs.update(create_constant_nodes_and_return_specs(values, program))
    program.graph_signature.input_specs = [specs[n.name] for n in graph.find_nodes(op="placeholder")]
    graph.eliminate_dead_code()
    program.graph_module.recompile()
    program.graph_module.meta[FOLDED_META] = folded
    return folded


class FoldCpuConstants(ExportedProgramPassBase):
    """`fold_cpu_constants` as an ExecuTorch pass (`edge.transform([FoldCpuConstants()])`)."""

    def call(self, exported_program) -> ExportedProgramPassResult:
        return ExportedProgramPassResult(exported_program, bool(fold_cpu_constants(exported_program)))

    def __repr__(self) -> str:
        return "FoldCpuConstants()"

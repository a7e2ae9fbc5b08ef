"""Reading an `ExportedProgram` the same way in every stage: operator names, its constants, its delegation tag.

Low in the import order (it needs only torch), so the partitioner, the backend, the converter and the report share
it without importing one another.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.export import ExportedProgram


def constants(program: ExportedProgram) -> dict[str, torch.Tensor]:
    """Placeholder name -> tensor, for every parameter, buffer and lifted constant of the program."""
    sig = program.graph_signature
    out = {}
    for mapping in (sig.inputs_to_parameters, sig.inputs_to_buffers, sig.inputs_to_lifted_tensor_constants):
        for name, target in mapping.items():
            tensor = program.state_dict.get(target, program.constants.get(target))
            if tensor is not None:
                out[name] = tensor
    return out


def constant_names(program: ExportedProgram) -> frozenset[str]:
    """Names of the placeholders that are parameters, buffers or lifted constants."""
    sig = program.graph_signature
    return frozenset(list(sig.inputs_to_parameters) + list(sig.inputs_to_buffers)
                     + list(sig.inputs_to_lifted_tensor_constants))


def partition_tag(program: ExportedProgram) -> str:
    """The delegation tag of a partition's program (the name its intermediates and report rows use).

    Read from the computing nodes only: an input placeholder keeps the meta of the node that produced it, which
    may be the output of another partition (and carry that partition's tag).
    """
    tags = Counter(n.meta.get("delegation_tag") for n in program.graph.nodes
                   if n.op == "call_function" and n.meta.get("delegation_tag"))
    return tags.most_common(1)[0][0] if tags else "neutron_partition"


def lowered_modules(graph_module: torch.fx.GraphModule) -> dict:
    """Delegate call node -> its `LoweredBackendModule`, in call order (ExecuTorch's `get_lowered_submodules`)."""
    from executorch.exir.lowered_backend_module import get_lowered_submodules

    return {node: module for _, module, node in get_lowered_submodules(graph_module)}


def op_schema(target) -> torch.FunctionSchema:
    """The schema of an ATen or edge OpOverload (an edge op wraps its ATen OpOverload)."""
    return getattr(target, "_schema", None) or target._op._schema


def schema_args(node: torch.fx.Node) -> dict:
    """A call's arguments by schema name, positional or keyword, defaults filled in (None where the schema has no
    default), for an ATen or edge OpOverload: the one argument normalisation of the passes, checks and converters."""
    schema = op_schema(node.target)
    out = {}
    for i, a in enumerate(schema.arguments):
        if i < len(node.args):
            out[a.name] = node.args[i]
        elif a.name in node.kwargs:
            out[a.name] = node.kwargs[a.name]
        else:
            out[a.name] = a.default_value if a.has_default_value() else None
    return out


def op_name(target) -> str:
    """'aten.convolution.default' for an edge or ATen OpOverload (also out variants and custom ops)."""
    op = target if hasattr(target, "_schema") else getattr(target, "_op", target)  # edge ops wrap an OpOverload
    schema = getattr(op, "_schema", None)
    if schema is None:
        return getattr(op, "__name__", str(op))
    return f"{schema.name.replace('::', '.')}.{op._overloadname}"


def op_base_name(target) -> str:
    """'convolution' for aten.convolution.default, its edge overload or its out variant."""
    name = op_name(target)
    parts = name.split(".")
    return parts[-2] if len(parts) >= 3 else parts[-1]

"""ATen pass: computations on constants are evaluated once and become constants.

A node whose tensor inputs are all parameters, buffers or constant tensors (or that has none: `arange`, `full`)
computes the same value at every inference, and so does `zeros_like` / `ones_like` / `full_like` of any tensor of
a static shape (it reads only the shape). An op with several results (`split`, `split_with_sizes`, `unbind`,
`chunk`) folds into one constant per result its `getitem` readers take: attention's packed in-projection weight
split into the query's and the key/value's parts (`F.multi_head_attention_forward` when the query is not the key)
becomes two weights that the quantizer quantizes as constants like any linear's. Left in the graph it would run on the CPU ("it computes on constants
only"): EfficientViT's attention biases, for one, are a parameter table indexed per head. Folded here, before
annotation, the value is a buffer that the quantizer treats like any other constant operand.

A call that returns a number computed from constants (`item` / `_local_scalar_dense` of a constant, Python
arithmetic on such numbers; export writes a static shape's sizes as plain ints) folds into that number, written into its readers' arguments: a tensor built from it
(`full((h * w, 1), stride.item())`, as a detector's head builds its stride table from the feature maps' shapes)
then has only constant inputs and folds in turn.

A folded constant is stored contiguous, whatever strides the ops that computed it left (remove_noops has taken
out the `contiguous()` calls by then): Swin's relative position bias, `table[index].view(n, n, -1).permute(2, 0,
1).contiguous().unsqueeze(0)`, folded with the permuted strides, is serialized with dim order (2, 0, 3, 1), and
ExecuTorch's portable `add` refuses operands of different dim orders (error 0x12, InvalidArgument).

Not folded: with `keep_parameters` (QAT, which trains the parameters after this pass) anything reading a
parameter; random and in-place ops; buffers the graph mutates; results larger than `FOLD_MAX_ELEMENTS` elements
(a folded `expand` must not turn into megabytes of constant data).
"""

from __future__ import annotations

import math
import operator

import torch
from torch.fx import GraphModule, Node

from .fx_utils import constant, finish

#: the largest result (in elements) folded into a constant
FOLD_MAX_ELEMENTS = 1 << 20
#: ops that read only their input's shape -> their fill value (full_like: its argument)
_SHAPE_ONLY = {torch.ops.aten.zeros_like.default: lambda n: 0, torch.ops.aten.ones_like.default: lambda n: 1,
               torch.ops.aten.full_like.default: lambda n: n.args[1]}


def _foldable_op(node: Node) -> bool:
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    schema = node.target._schema
    if schema.is_mutable or torch.Tag.nondeterministic_seeded in node.target.tags:
        return False
    return len(schema.returns) == 1 and isinstance(schema.returns[0].type, torch.TensorType)


_NUMBER_TYPES = (torch.NumberType, torch.IntType, torch.FloatType, torch.BoolType, torch.SymIntType, torch.SymBoolType)
#: modules of the Python functions export writes for arithmetic on numbers (operator.mul, math.ceil, torch.sym_max)
_NUMBER_FUNCTION_MODULES = {operator.add.__module__, math.ceil.__module__, "torch", "torch.fx.experimental.sym_node"}


def _number_call(node: Node) -> bool:
    """A call that returns one number: an op whose schema returns a Scalar / int / float / bool (item,
    _local_scalar_dense, sym_size), or Python arithmetic on numbers."""
    if node.op != "call_function":
        return False
    if isinstance(node.target, torch._ops.OpOverload):
        schema = node.target._schema
        return not schema.is_mutable and len(schema.returns) == 1 and isinstance(schema.returns[0].type, _NUMBER_TYPES)
    return getattr(node.target, "__module__", None) in _NUMBER_FUNCTION_MODULES and not isinstance(
        node.meta.get("val"), torch.Tensor) and node.meta.get("val") is not None


def _number(node: Node, values: dict):
    """The number a number call computes from constants, or None (a folded number is already written into its
    readers' arguments, so it is no input node here)."""
    if not all(a in values for a in node.all_input_nodes):
        return None
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
    with torch.no_grad():
        result = node.target(*args, **kwargs)
    return result if type(result) in (int, float, bool) else None


def _fold_number(node: Node, value) -> None:
    """Write `value` into the arguments of every reader of `node`, then erase it."""
    for reader in list(node.users):
        reader.args, reader.kwargs = torch.fx.node.map_arg((reader.args, reader.kwargs),
                                                           lambda n: value if n is node else n)
    node.graph.erase_node(node)


def _foldable_list_op(node: Node) -> bool:
    """An op returning a list of tensors (split, unbind, chunk) whose every reader takes one of them."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload) or not node.users:
        return False
    schema = node.target._schema
    if schema.is_mutable or len(schema.returns) != 1 or not isinstance(schema.returns[0].type, torch.ListType):
        return False
    return all(u.op == "call_function" and u.target is operator.getitem and isinstance(u.args[1], int)
               for u in node.users)


def _fold_list(gm: GraphModule, node: Node, values: dict) -> bool:
    """Fold a list-returning op on constants into one buffer per result read; True when it did."""
    fakes = node.meta.get("val")
    if not isinstance(fakes, (list, tuple)) or sum(getattr(f, "numel", lambda: 0)() for f in fakes) > FOLD_MAX_ELEMENTS:
        return False
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
    with torch.no_grad():
        results = node.target(*args, **kwargs)
    for reader in list(node.users):
        folded = _buffer(gm, reader, results[reader.args[1]].detach().clone())
        reader.replace_all_uses_with(folded)
        gm.graph.erase_node(reader)
        values[folded] = results[reader.args[1]]
    gm.graph.erase_node(node)
    return True


def _mutated(gm: GraphModule) -> set[Node]:
    """get_attr nodes that an in-place op of the graph writes."""
    out = set()
    for node in gm.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and \
                node.target._schema.is_mutable:
            out.update(a for a in node.all_input_nodes if a.op == "get_attr")
    return out


def fold_constants(gm: GraphModule, keep_parameters: bool = False) -> GraphModule:
    params = {name for name, _ in gm.named_parameters()} if keep_parameters else set()
    mutated = _mutated(gm)
    values: dict[Node, torch.Tensor] = {}  # folded or constant get_attr nodes -> their tensor
    for node in gm.graph.nodes:
        if node.op == "get_attr" and node.target not in params and node not in mutated:
            value = constant(gm, node)
            if value is not None:
                values[node] = value
    changed = False
    for node in list(gm.graph.nodes):
        if node.graph is not gm.graph:  # a getitem erased with its folded list op
            continue
        if _number_call(node) and (number := _number(node, values)) is not None:
            _fold_number(node, number)
            changed = True
            continue
        if _foldable_list_op(node) and all(a in values for a in node.all_input_nodes):
            changed |= _fold_list(gm, node, values)
            continue
        shape_only = node.op == "call_function" and node.target in _SHAPE_ONLY
        if not shape_only and (not _foldable_op(node) or not all(a in values for a in node.all_input_nodes)):
            continue
        fake = node.meta.get("val")
        if not isinstance(fake, torch.Tensor) or fake.numel() > FOLD_MAX_ELEMENTS:
            continue
        if shape_only:
            if not all(isinstance(d, int) for d in fake.shape) or not isinstance(_SHAPE_ONLY[node.target](node),
                                                                                 (int, float, bool)):
                continue
            value = torch.full(tuple(fake.shape), _SHAPE_ONLY[node.target](node), dtype=fake.dtype)
        else:
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
            with torch.no_grad():
                value = node.target(*args, **kwargs)
        value = value.detach().clone(memory_format=torch.contiguous_format)  # see the module docstring
        folded = _buffer(gm, node, value)
        node.replace_all_uses_with(folded)
        gm.graph.erase_node(node)
        values[folded] = value
        changed = True
    return finish(gm) if changed else gm


def _buffer(gm: GraphModule, node: Node, value: torch.Tensor) -> Node:
    i = 0
    while hasattr(gm, f"_folded{i}"):
        i += 1
    name = f"_folded{i}"
    gm.register_buffer(name, value)
    with gm.graph.inserting_before(node):
        folded = gm.graph.get_attr(name)
    fake = node.meta["val"]
    mode = getattr(fake, "fake_mode", None)
    folded.meta["val"] = mode.from_tensor(value) if mode is not None else value
    for key in ("nn_module_stack", "stack_trace", "source_fn_stack"):
        if key in node.meta:
            folded.meta[key] = node.meta[key]
    return folded

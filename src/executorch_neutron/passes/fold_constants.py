"""ATen pass: computations on constants are evaluated once and become constants.

A node whose tensor inputs are all parameters, buffers or constant tensors (or that has none: `arange`, `full`,
`zeros`) computes the same value at every inference: `arange`, `meshgrid` (ij or xy), `stack`, `cat`, `expand`,
`view` / `reshape`, `.to(dtype)`, comparisons, `any` / `all`, `where`, `logical_*` and any other deterministic op
whose inputs are such values fold into one buffer. So does an op that reads only the dtype, shape or device of a
run-time tensor (`_META_ONLY`: `arange(w).type_as(x)`, `x.new_full(size, v)`, `x.new_zeros`, `torch.full_like(x, v)`,
`zeros_like` / `ones_like`, `expand_as` / `view_as` / `reshape_as` of a constant, `x.size(d)`): it is evaluated with a
stand-in of that dtype and shape, never with the tensor's values; the shape must be static. An op with several
results (`split`, `split_with_sizes`, `unbind`, `chunk`, `meshgrid`) folds into one constant per result its
`getitem` readers take: attention's packed in-projection weight split into the query's and the key/value's parts
(`F.multi_head_attention_forward` when the query is not the key) becomes two weights that the quantizer quantizes as
constants like any linear's. Left in the graph such a computation would run on the CPU ("it computes on constants
only") or, where its first op reads a feature map's dtype (`type_as`), in an NPU partition of its own: EfficientViT's
attention biases are a parameter table indexed per head; the YOLOv8 / YOLO11 detection head in export mode
recomputes its anchor grid and stride columns in every forward() from the feature maps (`type_as(feats[0])`,
`meshgrid`, `stack`, `feats[0].new_full`). Folded here, before annotation, the value is a buffer that the quantizer
treats like any other constant operand.

A call that returns a number computed from constants (`item` / `_local_scalar_dense` of a constant, `sym_size` of a
static shape, Python arithmetic and comparisons on such numbers; export writes a static shape's sizes as plain ints)
folds into that number, written into its readers' arguments: a tensor built from it (`full((h * w, 1),
stride.item())`, `x.new_full((h * w, 1), stride[i])`) then has only constant inputs and folds in turn.

A folded constant is stored contiguous, whatever strides the ops that computed it left (remove_noops has taken
out the `contiguous()` calls by then): Swin's relative position bias, `table[index].view(n, n, -1).permute(2, 0,
1).contiguous().unsqueeze(0)`, folded with the permuted strides, is serialized with dim order (2, 0, 3, 1), and
ExecuTorch's portable `add` refuses operands of different dim orders (error 0x12, InvalidArgument).

Not folded: anything that reads a run-time tensor's values (an argument outside `_META_ONLY`'s, or a shape that is not
static); with `keep_parameters` (QAT, which trains the parameters after this pass) anything reading a parameter;
random, uninitialized (`empty*`) and in-place ops; buffers the graph mutates; results larger than
`FOLD_MAX_ELEMENTS` elements (a folded `expand` must not turn into megabytes of constant data).
"""

from __future__ import annotations

import math
import operator

import torch
from torch.fx import GraphModule, Node

from .fx_utils import constant, finish

#: the largest result (in elements) folded into a constant
FOLD_MAX_ELEMENTS = 1 << 20

_aten = torch.ops.aten
#: ops that read only the dtype, shape and device of some of their arguments -> the names of those arguments
_META_ONLY = {
    _aten.type_as.default: ("other",),
    _aten.to.other: ("other",),
    _aten.expand_as.default: ("other",),
    _aten.view_as.default: ("other",),
    _aten.reshape_as.default: ("other",),
    _aten.new_full.default: ("self",),
    _aten.new_zeros.default: ("self",),
    _aten.new_ones.default: ("self",),
    _aten.zeros_like.default: ("self",),
    _aten.ones_like.default: ("self",),
    _aten.full_like.default: ("self",),
    _aten.sym_size.int: ("self",),
    _aten.sym_numel.default: ("self",),
    _aten.size.int: ("self",),
    _aten.numel.default: ("self",),
    _aten.dim.default: ("self",),
}


#: checks export writes on a tensor's metadata (`.to(dtype)` asserts its input's dtype): on a constant they hold
#: once checked here, and are removed with it
_ASSERTIONS = {_aten._assert_tensor_metadata.default}


class _RunTime(Exception):
    """An input of the node is a run-time value (or a run-time tensor's shape is not static)."""


def _stand_in(node: Node) -> torch.Tensor:
    """A tensor with the dtype and static shape of `node`'s value, for an argument read for those only."""
    fake = node.meta.get("val")
    if not isinstance(fake, torch.Tensor) or not all(type(d) is int for d in fake.shape):
        raise _RunTime
    return torch.zeros(tuple(fake.shape), dtype=fake.dtype)


def _inputs(node: Node, values: dict) -> tuple[tuple, dict] | None:
    """(args, kwargs) of `node` with every input node replaced by its constant value, and every argument that the op
    reads only for its dtype and shape (`_META_ONLY`) by a stand-in; None when some input is a run-time value."""
    meta_only = _META_ONLY.get(node.target, ())
    names = [a.name for a in node.target._schema.arguments] if isinstance(node.target, torch._ops.OpOverload) else []

    def value(n: Node):
        if n not in values:
            raise _RunTime
        return values[n]

    def resolve(arg, name):
        if name in meta_only and isinstance(arg, Node) and arg not in values:
            return _stand_in(arg)
        return torch.fx.node.map_arg(arg, value)

    try:
        args = tuple(resolve(a, names[i] if i < len(names) else None) for i, a in enumerate(node.args))
        kwargs = {k: resolve(v, k) for k, v in node.kwargs.items()}
    except _RunTime:
        return None
    return args, kwargs


def _foldable_op(node: Node) -> bool:
    """A deterministic op with one tensor result that writes nothing and reads no uninitialized memory."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    schema = node.target._schema
    if schema.is_mutable or torch.Tag.nondeterministic_seeded in node.target.tags or "empty" in schema.name:
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
    """The number a number call computes from constants and static shapes, or None (a folded number is already
    written into its readers' arguments, so it is no input node here)."""
    inputs = _inputs(node, values)
    if inputs is None:
        return None
    with torch.no_grad():
        result = node.target(*inputs[0], **inputs[1])
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
    inputs = _inputs(node, values)
    if inputs is None:
        return False
    with torch.no_grad():
        results = node.target(*inputs[0], **inputs[1])
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
        if node.op == "call_function" and node.target in _ASSERTIONS:
            if (inputs := _inputs(node, values)) is not None:
                node.target(*inputs[0], **inputs[1])  # true of a constant's static metadata, or the model is wrong
                gm.graph.erase_node(node)
                changed = True
            continue
        if _number_call(node):
            if (number := _number(node, values)) is not None:
                _fold_number(node, number)
                changed = True
            continue
        if _foldable_list_op(node):
            changed |= _fold_list(gm, node, values)
            continue
        fake = node.meta.get("val")
        if not _foldable_op(node) or not isinstance(fake, torch.Tensor) or fake.numel() > FOLD_MAX_ELEMENTS:
            continue
        inputs = _inputs(node, values)
        if inputs is None:
            continue
        with torch.no_grad():
            value = node.target(*inputs[0], **inputs[1])
        value = value.detach().clone(memory_format=torch.contiguous_format)  # see the module docstring
        folded = _buffer(gm, node, value)
        node.replace_all_uses_with(folded)
        gm.graph.erase_node(node)
        values[folded] = value
        changed = True
    return _drop_unread_buffers(finish(gm)) if changed else gm


def _drop_unread_buffers(gm: GraphModule) -> GraphModule:
    """Unregister the buffers of this pass that no node reads any more (the intermediate values of a folded chain):
    a buffer left on the module would be carried into the program."""
    read = {n.target for n in gm.graph.nodes if n.op == "get_attr"}
    for name in [b for b in gm._buffers if b.startswith(_FOLDED) and b not in read]:
        del gm._buffers[name]
    return gm


_FOLDED = "_folded"  # the name stem of the buffers this pass registers


def _buffer(gm: GraphModule, node: Node, value: torch.Tensor) -> Node:
    i = 0
    while hasattr(gm, f"{_FOLDED}{i}"):
        i += 1
    name = f"{_FOLDED}{i}"
    gm.register_buffer(name, value)
    with gm.graph.inserting_before(node):
        folded = gm.graph.get_attr(name)
    fake = node.meta["val"]
    mode = getattr(fake, "fake_mode", None)
    # static: a fake of the export's mode would otherwise get symbolic sizes, and its readers no static shape
    folded.meta["val"] = mode.from_tensor(value, static_shapes=True) if mode is not None else value
    for key in ("nn_module_stack", "stack_trace", "source_fn_stack"):
        if key in node.meta:
            folded.meta[key] = node.meta[key]
    return folded

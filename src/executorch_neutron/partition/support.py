"""Per-node support decisions: generic rules (int8 in and out, static shapes, exclusions) + the registry's checks.

`decide(graph, ctx)` returns, for every compute node, None (the NPU runs it) or a `Rejection` with a reason a
user can read. q/dq nodes are not decided here: they follow the compute node they quantize.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

import torch
from torch.fx import Graph, Node

from ..core import qdq
from ..core.meta_keys import LEFT_FLOAT
from ..ops import registry
from ..ops.fusion import fused_activation, result_node
from ..ops.registry import CheckContext
from ..passes.fold_constants import FOLD_MAX_ELEMENTS
from ..passes.pipeline import PassContext, unmade_rewrite
from ..quantizer.precision import KEPT_FLOAT_META, KEPT_FLOAT_REASON


NOT_INT8 = "not quantized to int8"


@dataclass(frozen=True)
class Rejection:
    node: str
    op: str
    reason: str
    hint: str | None = None
    npu: str = "Neutron"  # the NPU that refused it (Neutron, or Ethos-U for a Vela limit)

    def message(self) -> str:
        text = f"operator {self.op} ({self.node}) is not supported by {self.npu}: {self.reason}; it will run on the CPU"
        return text + (f" (hint: {self.hint})" if self.hint else "")


def is_compute(node: Node) -> bool:
    return node.op == "call_function" and not qdq.is_qdq(node) and node.target is not operator.getitem


def excluded(name: str, spec) -> bool:
    """operators_not_to_delegate entries like 'aten::convolution', 'aten.convolution.default', 'convolution'."""
    base = name.rsplit(".", 1)[0]  # aten.convolution
    for entry in spec.operators_not_to_delegate:
        e = entry.replace("::", ".")
        if e in (name, base, base.split(".", 1)[-1]):
            return True
    return False


def resolve_excluded(names) -> tuple[str, ...]:
    """operators_not_to_delegate entries -> 'aten.<edge op>' names `excluded` matches; an ATen name that never
    reaches the edge graph (aten.conv2d.default) maps to its edge form (aten.convolution) through the registry's
    ATen ops of each entry. An unknown name is a ValueError listing the valid ones (it was ignored silently)."""
    known = {e.name.split(".")[1] for e in registry.entries()}
    aliases = {str(aten).split(".")[1]: e.name.split(".")[1]  # the registry's ATen ops that become each edge op
               for e in registry.entries() for aten, _ in e.quantize if str(aten).startswith("aten.")}
    out = []
    for entry in names:
        parts = entry.strip().replace("::", ".").split(".")
        short = parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[0]
        short = short if short in known else aliases.get(short, short)
        if short not in known:
            raise ValueError(f"operators_not_to_delegate: unknown operator {entry!r}; valid names (any of "
                             f"aten::NAME, aten.NAME.overload, NAME): {', '.join(sorted(known))}")
        out.append(f"aten.{short}")
    return tuple(dict.fromkeys(out))


def _static(node: Node) -> bool:
    vals = node.meta.get("val")
    vals = vals if isinstance(vals, (tuple, list)) else [vals]
    for v in vals:
        if isinstance(v, torch.Tensor) and any(not isinstance(d, int) for d in v.shape):
            return False
    return True


def _zero_dim(node: Node, ctx: CheckContext) -> bool:
    """A 0-d (scalar) activation among the node's inputs or outputs: a partition boundary of rank 0 does not run
    (LiteRT's tensors are never 0-d), so such nodes stay on the CPU. 0-d constants (a scalar multiplier) are
    baked into the flatbuffer and are fine."""
    inputs = [a for a in node.all_input_nodes if not ctx.is_constant_operand(a)]
    vals = [node.meta.get("val")] + [a.meta.get("val") for a in inputs]
    for v in vals:
        for t in v if isinstance(v, (tuple, list)) else [v]:
            if isinstance(t, torch.Tensor) and t.dim() == 0:
                return True
    return False


def source_op(node: Node) -> str | None:
    """The ATen op the user's model called that this edge node comes from (the outermost `from_node` provenance),
    when it is a different op: e.g. 'aten.hardsigmoid.default' for the add/clamp/div ExecuTorch decomposed it into."""
    chain = node.meta.get("from_node") or []
    outer = None
    while chain:
        outer = chain[-1]
        chain = getattr(outer, "from_node", None) or []
    target = str(getattr(outer, "target", "")) if outer is not None else ""
    if not target.startswith("aten.") or target.split(".")[1] == registry.op_name(node.target).split(".")[1]:
        return None
    return target


@functools.cache
def _annotated_ops() -> frozenset[str]:
    return frozenset(registry.op_name(t) for t in registry.annotation_table())


def _left_in_float(op: str) -> bool:
    """Whether NeutronQuantizer leaves ATen op `op` unannotated (float)."""
    return op not in _annotated_ops()


def _is_noop(node) -> bool:
    entry = registry.lookup(node.target) if isinstance(node, Node) and node.op == "call_function" else None
    return entry is not None and entry.noop and len(node.all_input_nodes) == 1


def _noop_chain_from_dq(node: Node) -> bool:
    """`node` is a noop (clone, view) fed by a chain of noops that starts at a dequantize."""
    while _is_noop(node):
        node = node.all_input_nodes[0]
        if qdq.is_dq(node):
            return True
    return False


def _noop_chain_to_q(node: Node) -> bool:
    """Every user of the noop `node` is a quantize, or a noop whose users are (recursively)."""
    return _is_noop(node) and bool(node.users) and all(
        qdq.is_q(u) or _noop_chain_to_q(u) for u in node.users)


def _unmade_rewrite(origin: str | None, ctx: CheckContext) -> str:
    """'; <the pass that writes `origin` from table ops and what this table lacks for it>', or ''."""
    why = origin and unmade_rewrite(origin, PassContext(backend=ctx.backend, profile=ctx.profile))
    return f"; {why}" if why else ""


def _decomposed_reason(node: Node, ctx: CheckContext) -> str | None:
    """Why a float node is float when it is a piece of a user's op outside the table, or of an int16 op the NPU
    runs in int8 only (else None)."""
    origin = source_op(node)
    left = (node.meta.get("custom") or {}).get(LEFT_FLOAT)
    if origin is not None and left:
        return (f"it is part of {origin}, left in float and decomposed into CPU operators: {left}")
    if origin is not None and _left_in_float(origin):
        return (f"it is part of {origin}, which is not in the {ctx.npu} operator table: NeutronQuantizer "
                "leaves it in float and ExecuTorch decomposed it into CPU operators" + _unmade_rewrite(origin, ctx))
    return _int16_origin_reason(node, origin, ctx)


def _int16_origin_reason(node: Node, origin: str | None, ctx: CheckContext) -> str | None:
    """Why a piece of an int16 ATen op the NPU runs in int8 only is on the CPU (the op's int16 refusal), else None."""
    why = registry.int16_refusal(_annotated_by_name().get(origin), ctx.backend) if _int16_piece(node, origin) else None
    if why:
        return (f"it is part of {origin}, int16, which {ctx.npu} does not run with int16 activations ({why}): "
                f"ExecuTorch decomposed it into CPU operators; {registry.INT16_HINT}")
    return None


@functools.cache
def _annotated_by_name() -> dict:
    return {registry.op_name(t): t for t in registry.annotation_table()}


def _int16_piece(node: Node, origin: str | None) -> bool:
    """`node` is a piece of the decomposition of ATen op `origin` whose pieces read an int16 dequantize."""
    seen, todo = set(), [node]
    while origin is not None and todo:
        n = todo.pop()
        if n in seen or not is_compute(n) or source_op(n) != origin:
            continue
        seen.add(n)
        if any(qdq.per_tensor_kind(a) == "dq" and a.args[5] == torch.int16 for a in n.all_input_nodes):
            return True
        todo += n.all_input_nodes
    return False


def _int8_reason(node: Node, ctx: CheckContext) -> str | None:
    # a chain of noops between a dequantize and its quantizes is int8 throughout: ExecuTorch decomposes one
    # quantized op into it after quantization (flatten of a channels-last tensor: a copy to contiguous memory, then
    # a view), so its inner links carry no quantize / dequantize pair
    chained = _is_noop(node)
    for arg in node.all_input_nodes:
        if ctx.is_constant_operand(arg):
            continue  # weights and int32 biases: the op's own checks decide
        if chained and _noop_chain_from_dq(arg):
            continue
        if not qdq.is_dq(arg):
            if not ctx.quantized_model:
                return "the model has no quantize nodes: quantize it with NeutronQuantizer (or use lower())"
            return _decomposed_reason(node, ctx) or (
                f"input {arg.name} is float (no dequantize node): it is computed in float on the CPU")
        if qdq.per_tensor_kind(arg) == "dq" and arg.args[5] not in _computed(ctx):
            return f"input {arg.name} is {arg.args[5]}, {ctx.npu} computes {_computed_text(ctx)}"
    out = result_node(node)
    if not out.users:
        return "its result is unused"
    for user in out.users:
        if chained and _noop_chain_to_q(user):
            continue
        if not qdq.is_q(user):
            return _decomposed_reason(node, ctx) or (
                f"output is not quantized to int8 (used by {user.name} without a quantize node)")
        if qdq.per_tensor_kind(user) == "q" and user.args[5] not in _computed(ctx):
            return f"output is quantized to {user.args[5]}, {ctx.npu} computes {_computed_text(ctx)}"
    return None


_TORCH_DTYPES = {"int8": torch.int8, "int16": torch.int16}


def _computed(ctx: CheckContext) -> tuple:
    """The activation types the target's NPU computes (`activation_dtypes`: int8, and int16 on Ethos-U)."""
    return tuple(_TORCH_DTYPES[d] for d in getattr(ctx.target, "activation_dtypes", ("int8",)))


def _computed_text(ctx: CheckContext) -> str:
    return " and ".join(getattr(ctx.target, "activation_dtypes", ("int8",)))


def is_int16(node: Node) -> bool:
    """The node reads or writes an int16 activation (its dequantized inputs, its output's quantize nodes)."""
    ends = [a for a in node.all_input_nodes if qdq.per_tensor_kind(a) == "dq"]
    ends += [u for u in result_node(node).users if qdq.per_tensor_kind(u) == "q"]
    return any(e.args[5] == torch.int16 for e in ends)


def _output_float(node: Node) -> bool:
    """No user quantizes the result of `node` (the quantizer did not annotate it)."""
    return not any(qdq.is_q(u) for u in result_node(node).users)


def _constant_only(node: Node, ctx: CheckContext) -> bool:
    inputs = node.all_input_nodes
    return bool(inputs) and all(ctx.is_constant_operand(a) for a in inputs)


def decide(graph: Graph, ctx: CheckContext) -> dict[Node, Rejection | None]:
    """Per compute node: None (delegated) or its Rejection; a fused activation follows its producer's decision."""
    decisions: dict[Node, Rejection | None] = {}
    absorbed: dict[Node, Node] = {}  # fused activation -> producer
    for node in graph.nodes:
        if is_compute(node):
            act = fused_activation(node)
            if act is not None:
                absorbed[act] = node
    for node in graph.nodes:
        if not is_compute(node) or node in absorbed:
            continue
        decisions[node] = _decide_one(node, ctx)
    _split_noop_chains(decisions, ctx)
    for act, producer in absorbed.items():
        rej = decisions.get(producer)
        if rej is None:
            decisions[act] = None
        elif rej.reason.startswith(NOT_INT8):  # a float pair: the activation's own reason says it best
            decisions[act] = _decide_one(act, ctx)
        else:
            decisions[act] = Rejection(act.name, registry.op_name(act.target),
                                       f"fused into {producer.name} ({registry.op_name(producer.target)}), "
                                       "which runs on the CPU", npu=ctx.npu)
    return decisions


def _split_noop_chains(decisions: dict, ctx: CheckContext) -> None:
    """A noop is int8 inside a chain of noops only when the whole chain runs on the NPU: a link next to a rejected
    one stays on the CPU too (repeated until no link changes)."""
    changed = True
    while changed:
        changed = False
        for node, rej in decisions.items():
            if rej is not None or not _is_noop(node):
                continue
            links = [a for a in node.all_input_nodes if _is_noop(a)] + [u for u in node.users if _is_noop(u)]
            cpu = next((n for n in links if decisions.get(n) is not None), None)
            if cpu is not None:
                decisions[node] = Rejection(node.name, registry.op_name(node.target),
                                            f"{NOT_INT8}: int8 only with {cpu.name}, which runs on the CPU",
                                            npu=ctx.npu)
                changed = True


def _decide_one(node: Node, ctx: CheckContext, lookup=registry.lookup) -> Rejection | None:
    name = registry.op_name(node.target)

    def reject(reason, hint=None):
        return Rejection(node.name, name, reason, hint, npu=ctx.npu)

    if excluded(name, ctx.spec):
        return reject("excluded by operators_not_to_delegate")
    if (node.meta.get("custom") or {}).get(KEPT_FLOAT_META):
        return reject(KEPT_FLOAT_REASON)
    entry = lookup(node.target)
    if entry is None:
        origin = source_op(node)
        int16_why = _int16_origin_reason(node, origin, ctx)
        if int16_why:
            return reject(int16_why)
        left = (node.meta.get("custom") or {}).get(LEFT_FLOAT)
        why = registry.no_kernel_reason(node, ctx.backend)
        why = f"{why}; it is left in float: {left}" if why and left else (why or left and f"it is left in float: {left}")
        return reject(f"no {ctx.npu} kernel for this operator" + (f" (part of {origin})" if origin else "")
                      + (f": {why}" if why else "") + _unmade_rewrite(origin, ctx))
    if not _static(node):
        return reject(f"dynamic shape: {ctx.npu} needs static shapes", "export with static shapes")
    if _constant_only(node, ctx):
        return reject("it computes on constants only (nothing to run per inference) and was not folded (QAT keeps "
                      f"computations on parameters; results over {FOLD_MAX_ELEMENTS:,} elements are not folded): fold it "
                      "before export")
    reason = _int8_reason(node, ctx)
    if reason:
        # nothing quantized, or the quantizer left this node's output float: the op's own limit says why
        failed = entry.check(node, ctx) if not ctx.quantized_model or _output_float(node) else None
        if failed and ctx.quantized_model:
            return reject(f"{NOT_INT8}: NeutronQuantizer leaves it in float: {failed[0]}", failed[1])
        return reject(f"{NOT_INT8}: {reason}" + (f"; its own check: {failed[0]}" if failed else ""))
    if _zero_dim(node, ctx):
        return reject(f"0-d (scalar) tensor: {ctx.npu} partitions take tensors of rank 1 or more",
                      "reshape the scalar to shape (1,) in the model if it should run on the NPU")
    failed = entry.check(node, ctx)
    if failed:
        return reject(*failed)
    why = registry.int16_refusal(node.target, ctx.backend) if is_int16(node) else None
    if why:
        return reject(f"int16 activations: {why}", registry.INT16_HINT)
    return None


def decide_aten(node: Node, ctx: CheckContext) -> Rejection | None:
    """The decision for an ATen node before decomposition (used to keep ops like prelu only when delegated): the
    same decision as for its edge node (int8 is recognised on ATen quantize/dequantize nodes too)."""
    return _decide_one(node, ctx, registry.lookup_aten)

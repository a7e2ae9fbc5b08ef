"""Pattern annotators of the Neutron quantizer, one per annotation family; which ATen op gets which family is not
decided here but by the operator registry (`ops.registry.annotation_table`): an ATen op is quantized exactly when
a registry entry converts what it becomes.

Each annotator receives an anchor node (the first op of a pattern) and an `AnnotationContext`. It writes a
`QuantizationAnnotation` on every node of the matched pattern and returns them, or returns None to leave the
node float. The families:

- `weighted` (`weighted_transpose`): conv / linear [+ batch_norm] [+ activation]: int8 input, per-channel
  symmetric weight, int32 derived bias; only the last op of the pattern has an observed output.
- `binary`: add / sub / mul [+ activation]: every tensor input int8, own output qparams;
  `binary_scalar_divisor`: div by a scalar.
- An activation (relu, relu6, hardtanh, clamp) is fused into a producer that `fuses_activation` only when its
  bounds are ones the converter fuses (`ops.fusion.aten_fusable`); otherwise it is annotated on its own.
- `own_output` (`own_output2`: two tensor operands): int8 LiteRT kernels with free output qparams.
- `clamp` / `mean`: own output qparams where a RELU op / the spatial MEAN requantizes, else shared with the input
  (MAXIMUM/MINIMUM and other means need equal input and output qparams).
- `fixed_sigmoid_softmax` / `fixed_tanh`: the output qparams LiteRT requires.
- `shared`: data movement, pools, resize: the output reuses the input's qparams (LiteRT's int8 kernels require
  equal input and output scales).
- `concat` (`shared_operands`: the two tensor operands of maximum / minimum): all inputs and the output share one
  set of qparams.
- `matmul`: mm / addmm with a constant right operand are annotated like linear; otherwise all operands int8.

Inputs produced by an already annotated op of the same precision reuse that op's output qparams
(`SharedQuantizationSpec`), so a tensor is quantized once; other inputs (model inputs, float ops, a producer of the
other precision) get the activation spec. Each node's specs follow its precision (`AnnotationContext.precision`:
int8, or int16 activations with int8 weights).

An op set to int16 (globally or by any per-layer rule, an explicit one on the op or node included) that has no
int16 support on the quantizer's back end (`ops.registry.int16_refusal`: the converter's, LiteRT's or the back-end
compiler's reason, e.g. Vela's int8-only HARD_SWISH) is quantized int8 instead, with requantizations around it, so it
still runs on the NPU; its node carries the note "kept int8: <reason>" (`registry.KEPT_INT8_META`), which the
delegation report lists.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import torch
from torch.fx import Node
from torchao.quantization.pt2e.quantizer import (
    QuantizationAnnotation,
    QuantizationSpecBase,
    SharedQuantizationSpec,
)
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

from ..ops import fusion, registry
from ..passes.fx_utils import SHARE_INPUT_QPARAMS, arg
from .qconfig import NeutronQConfig

aten = torch.ops.aten

Annotator = Callable[[Node, "AnnotationContext"], Optional[list[Node]]]


@dataclass
class AnnotationContext:
    qconfig: NeutronQConfig
    skip: Callable[[Node], bool]  # True for nodes the user asked to keep float
    precision: Callable[[Node], str] = lambda node: "int8"  # the node's precision (precision.PRECISIONS)
    #: the back end of the quantizer's target (`target.kind`): which ops have int16 support (None: not checked)
    backend: str | None = None

    def free(self, node: object) -> bool:
        """A float-tensor call_function node, not annotated yet, not skipped, not a reshaped constant."""
        return (
            isinstance(node, Node)
            and node.op == "call_function"
            and not is_annotated(node)
            and is_float_tensor(node)
            and not is_constant(node)
            and not self.skip(node)
            and not reads_zero_dim_input(node)
        )

    def specs(self, node: Node) -> NeutronQConfig:
        """The specs of `node`'s precision (int8 or int16 activations; int8 weights either way)."""
        return self.qconfig.specs(self.precision(node))

    def input_spec(self, arg: Node, node: Node) -> QuantizationSpecBase:
        """Reuse the producer's output qparams when it has them in `node`'s precision, else observe with `node`'s
        activation spec (an int16 node reading an int8 producer, or the reverse, gets its own qparams: convert_pt2e
        leaves a requantization, which the converter writes as a QUANTIZE)."""
        if (is_annotated(arg) and arg.meta[Q_ANNOTATION_KEY].output_qspec is not None
                and self.precision(arg) == self.precision(node)):
            return SharedQuantizationSpec(arg)
        return self.specs(node).activation


# ---------------------------------------------------------------------------------------------- helpers


def reads_zero_dim_input(node: Node) -> bool:
    """The node reads a 0-d (scalar) model input, e.g. `conv(x) * s`. Such a node stays float: the partitioner
    keeps it on the CPU anyway (0-d tensors), and a per-tensor int8 range observed on a few calibration values of
    a scalar (often one) clamps every other value of it (s = 2 calibrated at s = -1.5 becomes 0)."""
    for a in node.all_input_nodes:
        val = a.meta.get("val")
        if a.op == "placeholder" and isinstance(val, torch.Tensor) and val.dim() == 0:
            return True
    return False


def is_annotated(node: Node) -> bool:
    ann = node.meta.get(Q_ANNOTATION_KEY)
    return ann is not None and ann._annotated


def is_float_tensor(node: object) -> bool:
    val = node.meta.get("val") if isinstance(node, Node) else None
    if isinstance(val, (list, tuple)):
        return len(val) > 0 and all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in val)
    return isinstance(val, torch.Tensor) and val.is_floating_point()


def is_constant(node: object) -> bool:
    """A tensor computed from parameters/buffers only (no model input upstream)."""
    if not isinstance(node, Node):
        return False
    if node.op == "get_attr":
        return True
    if node.op != "call_function" or node.target not in SHAPE_OPS:
        return False
    return is_constant(node.args[0])


def mark(
    node: Node, inputs: dict[Node, Optional[QuantizationSpecBase]], output: Optional[QuantizationSpecBase]
) -> None:
    node.meta[Q_ANNOTATION_KEY] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True
    )


def fusion_tail(node: Node, ctx: AnnotationContext, steps: Iterable[Callable[[Node], bool]]) -> list[Node]:
    """The chain node -> [a node step 0 accepts] -> [a node step 1 accepts] ..., each optional, each the only user."""
    chain = [node]
    for accepts in steps:
        users = list(chain[-1].users)
        if len(users) == 1 and accepts(users[0]) and ctx.free(users[0]) and users[0].args[0] is chain[-1]:
            chain.append(users[0])
    return chain


def mark_chain(chain: list[Node], anchor_inputs: dict, output: QuantizationSpecBase) -> list[Node]:
    """Annotate a fused chain: inputs on the anchor, the observed output on the last node only."""
    mark(chain[0], anchor_inputs, output if len(chain) == 1 else None)
    for mid in chain[1:-1]:
        mark(mid, {}, None)
    if len(chain) > 1:
        mark(chain[-1], {}, output)
    return chain


# ---------------------------------------------------------------------------------------------- op sets

BATCH_NORM = frozenset({aten.batch_norm.default, aten._native_batch_norm_legit_no_training.default})
#: view-like ops through which a constant stays a constant (a reshaped weight is not an activation)
SHAPE_OPS = frozenset({aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.flatten.using_ints,
                       aten.unflatten.int, aten.permute.default, aten.transpose.int, aten.t.default,
                       aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default,
                       aten.clone.default})


def _is_batch_norm(node: Node) -> bool:
    return node.target in BATCH_NORM


# ---------------------------------------------------------------------------------------------- families


def weighted(weight_axis: Callable[[Node], tuple[int, bool]]) -> Annotator:
    """conv/linear [+bn] [+activation]; `weight_axis(node)` gives (output-channel axis, per-channel allowed)."""

    def annotate(node: Node, ctx: AnnotationContext):
        x, w = node.args[0], node.args[1]
        b = node.args[2] if len(node.args) > 2 else None
        if not (is_float_tensor(x) and isinstance(w, Node)):
            return None
        qc = ctx.specs(node)
        axis, channel_ok = weight_axis(node)
        # a weight computed at run time is quantized on the CPU per tensor: ExecuTorch's quantize_per_channel
        # kernel aborts on the float scales convert_pt2e gives it (a constant one is folded to int8 instead)
        per_channel = qc.per_channel and channel_ok and is_constant(w)
        inputs = {x: ctx.input_spec(x, node), w: qc.weight(axis, per_channel)}  # order: input, weight, bias
        if isinstance(b, Node):
            inputs[b] = qc.bias((x, node), (w, node), per_channel)
        chain = fusion_tail(node, ctx, (_is_batch_norm, fusion.aten_fusable))
        shared = node.meta.get(SHARE_INPUT_QPARAMS)  # an exact rewrite of an op that shares its input's
        return mark_chain(chain, inputs, SharedQuantizationSpec((x, node)) if shared else qc.activation)

    return annotate


def _conv_axis(node: Node) -> tuple[int, bool]:
    return 0, True


def _conv_transpose_axis(node: Node) -> tuple[int, bool]:
    # weight is [in, out / groups, k...]: per-channel along axis 1 only names every output channel if groups == 1
    return 1, arg(node, "groups") == 1


def binary(fuse: bool = False, scalar_only_rhs: bool = False) -> Annotator:
    """Elementwise binary op [+ fused activation]; scalars stay literal, tensor inputs are int8."""

    def annotate(node: Node, ctx: AnnotationContext):
        lhs, rhs = node.args[0], node.args[1]
        if scalar_only_rhs and not isinstance(rhs, numbers.Number):
            return None
        tensors = [a for a in (lhs, rhs) if isinstance(a, Node)]
        if not tensors or not all(is_float_tensor(a) for a in tensors):
            return None
        if any(not isinstance(a, (Node, numbers.Number)) for a in (lhs, rhs)):
            return None
        inputs = {a: ctx.input_spec(a, node) for a in tensors}
        chain = fusion_tail(node, ctx, (fusion.aten_fusable,) if fuse else ())
        # a rewrite whose result must stay in its first operand's range (a masked score saturating at its minimum)
        if node.meta.get(SHARE_INPUT_QPARAMS) and isinstance(lhs, Node):
            return mark_chain(chain, inputs, SharedQuantizationSpec((lhs, node)))
        return mark_chain(chain, inputs, ctx.specs(node).activation)

    return annotate


def _unary(output: Callable[[Node, AnnotationContext], QuantizationSpecBase], extra_inputs: int = 0) -> Annotator:
    """Single tensor input (args[0]; `extra_inputs` more tensor args quantized as activations)."""

    def annotate(node: Node, ctx: AnnotationContext):
        x = node.args[0]
        if not is_float_tensor(x):
            return None
        inputs = {x: ctx.input_spec(x, node)}
        for extra in node.args[1 : 1 + extra_inputs]:
            if not is_float_tensor(extra):
                return None
            inputs.setdefault(extra, ctx.input_spec(extra, node))
        mark(node, inputs, output(node, ctx))
        return [node]

    return annotate


def own_output(extra_inputs: int = 0) -> Annotator:
    return _unary(lambda node, ctx: ctx.specs(node).activation, extra_inputs)


def fixed_output(which: str) -> Annotator:
    return _unary(lambda node, ctx: getattr(ctx.specs(node), which))


def shared() -> Annotator:
    return _unary(lambda node, ctx: SharedQuantizationSpec((node.args[0], node)))


def _concat_root(tensors) -> Node:
    """The input whose qparams the others share: one that another input is computed from (edge replication cats
    x with slices of x), else the first. Rooting at a slice of x instead makes torchao's sharing groups point into
    themselves when x has no annotated producer (a model input): RecursionError in prepare_pt2e."""
    for t in tensors:
        if any(isinstance(o, Node) and o.op == "call_function" and o.args and o.args[0] is t for o in tensors):
            return t
    return tensors[0]


def concat(node: Node, ctx: AnnotationContext):
    return _share_all(node, node.args[0], ctx)


def shared_operands(node: Node, ctx: AnnotationContext):
    """maximum / minimum: both tensor operands and the output share one set of qparams."""
    return _share_all(node, [a for a in node.args[:2] if isinstance(a, Node)], ctx)


def _share_all(node: Node, tensors, ctx: AnnotationContext):
    if not tensors or not all(is_float_tensor(t) for t in tensors):
        return None
    first = _concat_root(tensors)
    same = SharedQuantizationSpec((first, node))
    inputs = {first: ctx.input_spec(first, node)}
    for t in tensors[1:]:
        inputs.setdefault(t, same)
    mark(node, inputs, same)
    return [node]


def matmul(node: Node, ctx: AnnotationContext):
    """mm / addmm: constant mat2 -> like linear (weight axis 1 of mat2 [in, out]); else int8 operands."""
    qc = ctx.specs(node)
    is_addmm = node.target == aten.addmm.default
    bias = node.args[0] if is_addmm else None
    lhs, rhs = (node.args[1], node.args[2]) if is_addmm else (node.args[0], node.args[1])
    operands = [t for t in (bias, lhs, rhs) if t is not None]
    if not all(is_float_tensor(t) for t in operands):
        return None
    unit_scaling = not is_addmm or (arg(node, "beta") == 1 and arg(node, "alpha") == 1)
    if is_constant(rhs) and unit_scaling and (bias is None or (is_constant(bias) and bias.meta["val"].dim() == 1)):
        inputs = {lhs: ctx.input_spec(lhs, node), rhs: qc.weight(1)}
        if bias is not None:
            inputs[bias] = qc.bias((lhs, node), (rhs, node))
    else:
        inputs = {t: ctx.input_spec(t, node) for t in operands}
    mark(node, inputs, qc.activation)
    return [node]


def clamp(node: Node, ctx: AnnotationContext):
    """Own output qparams when the bounds are a RELU op's (it requantizes), else shared (MAXIMUM/MINIMUM)."""
    bounds = fusion.activation_bounds(node)
    own = bounds is not None and fusion.activation_codes_for(bounds) is not None
    return (own_output() if own else shared())(node, ctx)


def mean(node: Node, ctx: AnnotationContext):
    """Own output qparams for a mean over H and W of a 4D tensor (MEAN requantizes), else shared."""
    x, dims = node.args[0], arg(node, "dim") or []
    rank = x.meta["val"].dim() if isinstance(x, Node) and isinstance(x.meta.get("val"), torch.Tensor) else 0
    spatial = rank == 4 and sorted(d % 4 for d in dims) == [2, 3]
    return (own_output() if spatial else shared())(node, ctx)


# ---------------------------------------------------------------------------------------------- the table


def _family(name: str, fuses: bool) -> Annotator:
    return {
        "weighted": lambda: weighted(_conv_axis),
        "weighted_transpose": lambda: weighted(_conv_transpose_axis),
        "binary": lambda: binary(fuse=fuses),
        "binary_scalar_divisor": lambda: binary(scalar_only_rhs=True),
        "matmul": lambda: matmul,
        "own_output": own_output,
        "own_output2": lambda: own_output(extra_inputs=1),
        "clamp": lambda: clamp,
        "mean": lambda: mean,
        "fixed_sigmoid_softmax": lambda: fixed_output("sigmoid_softmax"),
        "fixed_tanh": lambda: fixed_output("tanh"),
        "shared": shared,
        "concat": lambda: concat,
        "shared_operands": lambda: shared_operands,
    }[name]()


def _table() -> dict:
    """aten op -> annotator, from the operator registry (its `quantize` families and `fuses_activation`)."""
    return {op: _family(family, fuses) for op, (family, fuses) in registry.annotation_table().items()}


#: aten op -> annotator; the quantizer visits nodes in graph order and calls the annotator of each free node.
ANNOTATORS: dict = _table()
#: the ATen activations a conv/linear/add/mul may absorb (their bounds decide, see fusion.aten_fusable)
FUSABLE_ACTIVATIONS: frozenset = fusion.aten_activations()


def kept_int8(node: Node, ctx: AnnotationContext) -> str | None:
    """Why `node`, set to int16, is quantized int8 instead (its op has no int16 support on the back end), or None."""
    if ctx.backend is None or node.op != "call_function" or node.target not in ANNOTATORS:
        return None
    if ctx.precision(node) != "int16":
        return None
    return registry.int16_refusal(node.target, ctx.backend)


def _int8_fallback(gm: torch.fx.GraphModule, ctx: AnnotationContext) -> AnnotationContext:
    """`ctx` with int8 for the int16 nodes whose op has no int16 support (each noted in `node.meta["custom"]`, which
    export and to_edge carry to the edge graph)."""
    kept = {}
    for node in gm.graph.nodes:
        why = kept_int8(node, ctx)
        if why:
            kept[node] = why
            node.meta["custom"] = {**(node.meta.get("custom") or {}), registry.KEPT_INT8_META: f"kept int8: {why}"}
    if not kept:
        return ctx
    precision = ctx.precision
    return dataclasses.replace(ctx, precision=lambda node: "int8" if node in kept else precision(node))


def annotate_graph(gm: torch.fx.GraphModule, ctx: AnnotationContext) -> None:
    ctx = _int8_fallback(gm, ctx)
    for node in gm.graph.nodes:
        annotator = ANNOTATORS.get(node.target)
        if annotator is not None and ctx.free(node):
            annotator(node, ctx)

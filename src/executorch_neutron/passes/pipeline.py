"""The ATen pass pipeline: every rewrite the quantizer runs before annotation, in one ordered list.

`NeutronQuantizer.transform_for_annotation` calls `run_passes(gm, PassContext(...))`: each `Step` names its pass
once and says why it sits where it does: `order`, the reason in words ("any" when no other step must run before or
after it), and `after` / `before`, the steps that must run earlier / later, each named in the reason of the step
that declares it (a constraint is declared once, by the step whose reason explains it; the other step's reason may
point there with "see there"). `check_order` holds the list to them when PIPELINE is built: a list that breaks one
does not import, with the two steps and the reason. A step carries its conditions as data: `qat_keyword` passes
the QAT flag to the pass under that keyword, `backends` limits it to targets of those back-end kinds, `needs_ops`
skips the pass when the target's operator table (for the context's back-end kind and constraint profile) does not
run all of those edge ops, since the rewrite's pieces would then be split between NPU and CPU, and `op_flags`
((keyword, edge op) pairs) tells the pass under each keyword whether that table runs the op (so it can write the
rewrite from ops the table has). The runner has no special cases. SUPPORTED_OPS.md lists the steps in this order
with their docstrings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import GraphModule

from ..ops import registry
from ..target import ETHOS_U, NEUTRON
from .adaptive_avg_pool1d_to_2d import adaptive_avg_pool1d_to_2d
from .align_corners_resize_to_linear import align_corners_resize_to_linear
from .adaptive_max_pool_decompose import adaptive_max_pool_decompose
from .adaptive_pool_to_linear import adaptive_pool_to_linear
from .add_alpha_to_mul import add_alpha_to_mul
from .avg_pool_ceil import avg_pool_ceil
from .batch_norm_to_conv import batch_norm_to_conv
from .batch_split import batch_split
from .broadcast_operand_to_expand import broadcast_operand_to_expand
from .conv1d_to_conv2d import conv1d_to_conv2d
from .conv3d_to_conv2d import conv3d_to_conv2d
from .cosine_similarity_decompose import cosine_similarity_decompose
from .dilated_max_pool import dilated_max_pool
from .div_by_tensor_to_rsqrt import div_by_tensor_to_rsqrt
from .div_to_mul import div_to_mul
from .elu_decompose import elu_decompose
from .expand_to_cat import expand_to_cat
from .fold_constants import fold_constants
from .fold_linear_batch_norm import fold_linear_batch_norm
from .gather_to_slices import gather_to_slices
from .gelu_to_sigmoid import gelu_to_sigmoid
from .glu_to_sigmoid_mul import glu_to_sigmoid_mul
from .group_norm_decompose import group_norm_decompose
from .hardsigmoid_to_conv import hardsigmoid_to_conv
from .inline_autocast import inline_autocast
from .inplace_view_to_functional import inplace_view_to_functional
from .int_scalars_to_float import int_scalars_to_float
from .l2_normalize_decompose import l2_normalize_decompose
from .layer_norm_decompose import layer_norm_decompose
from .linear_rank1_to_rank2 import linear_rank1_to_rank2
from .log1p_to_log import log1p_to_log
from .log_sigmoid_decompose import log_sigmoid_decompose
from .masked_softmax_decompose import masked_softmax_decompose
from .matmul_to_bmm import matmul_to_bmm
from .max_dim_to_amax import max_dim_to_amax
from .max_pool_padding import max_pool_padding
from .max_pool_split import max_pool_split
from .mean1d_to_mean2d import mean1d_to_mean2d
from .mean_axis_split import mean_axis_split
from .median_to_topk import median_to_topk
from .pad_modes_to_cat import pad_modes_to_cat
from .patch_conv_to_pointwise import patch_conv_to_pointwise
from .permute_rank4 import permute_rank4
from .pixel_shuffle_to_permute import pixel_shuffle_to_permute
from .pool1d_to_pool2d import pool1d_to_pool2d
from .pool3d_to_pool2d import pool3d_to_pool2d
from .pow_to_mul import pow_to_mul
from .reduce_all_keepdim import reduce_all_keepdim
from .remove_bn_counters import remove_bn_counters
from .remove_noops import remove_noops
from .resize_halve_to_pool import resize_halve_to_pool
from .rnn_unroll import rnn_unroll
from .round_decimals_decompose import round_decimals_decompose
from .sdpa_to_matmul import sdpa_to_matmul
from .strided_slice_to_reshape import strided_slice_to_reshape
from .silu_to_sigmoid_mul import silu_to_sigmoid_mul
from .sink_batch_reshapes import sink_batch_reshapes
from .sink_squeeze import sink_squeeze
from .softplus_decompose import softplus_decompose
from .split_to_slices import split_to_slices
from .stack_to_cat import stack_to_cat
from .threshold_decompose import threshold_decompose
from .threshold_to_clamp import threshold_to_clamp
from .upsample_1x1_to_expand import upsample_1x1_to_expand
from .var_decompose import var_decompose
from .vector_norm_decompose import vector_norm_decompose

_edge = exir_ops.edge.aten


@dataclass(frozen=True)
class PassContext:
    """What the conditions of the steps read: QAT or not, the back-end kind of the target (`target.kind`) and the
    constraint profile (`NeutronCompileSpec.constraints`)."""

    is_qat: bool = False
    backend: str = NEUTRON
    profile: str = "sdk-current"


#: in a step's `before` (or `after`): every other step of the pipeline
EVERY_OTHER_STEP = "*"


@dataclass(frozen=True)
class Step:
    """One pass of the pipeline: `order` says why it sits where it does, `after` / `before` name the steps that
    must run earlier / later (each named in `order`; `EVERY_OTHER_STEP` for all of them), checked by
    `check_order`; the other fields are its conditions."""

    run: Callable[..., GraphModule]
    order: str
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    qat_keyword: str | None = None
    needs_ops: tuple = ()
    op_flags: tuple[tuple[str, object], ...] = ()
    backends: frozenset | None = None  # None: every back end
    #: the ATen ops (by name) it writes from table ops: where `needs_ops` keeps it from running, the partitioner's
    #: reason for their float pieces names it and what the table lacks (`unmade_rewrite`)
    rewrites: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.run.__name__

    def applies(self, ctx: PassContext) -> bool:
        if self.backends is not None and ctx.backend not in self.backends:
            return False
        return all(registry.runs(op, ctx.backend, ctx.profile) for op in self.needs_ops)

    def keywords(self, ctx: PassContext) -> dict:
        flags = {key: registry.runs(op, ctx.backend, ctx.profile) for key, op in self.op_flags}
        return flags | ({self.qat_keyword: ctx.is_qat} if self.qat_keyword else {})


class PassOrderError(ValueError):
    """A list of steps that breaks an order constraint of its steps (or names a step it does not hold)."""


def constraints(steps: Sequence[Step]) -> list[tuple[str, str, Step]]:
    """(earlier, later, the step whose `after` / `before` says so) for every order constraint of `steps`."""
    names = [s.name for s in steps]
    out = []
    for step in steps:
        for key, mine_first in (("before", True), ("after", False)):
            for named in getattr(step, key):
                for other in ([n for n in names if n != step.name] if named == EVERY_OTHER_STEP else [named]):
                    out.append((step.name, other, step) if mine_first else (other, step.name, step))
    return out


def check_order(steps: Sequence[Step]) -> tuple[Step, ...]:
    """`steps` as a tuple when every step appears once, every name in an `after` / `before` is one of them and the
    order satisfies every constraint; else a PassOrderError listing each problem (both steps and the reason)."""
    names = [s.name for s in steps]
    position = {name: i for i, name in enumerate(names)}
    problems = [f"{name} appears {names.count(name)} times" for name in sorted(set(names)) if names.count(name) > 1]
    problems += [f"{step.name} names {other!r} in its order, which is no step of the list" for step in steps
                 for other in (*step.after, *step.before) if other != EVERY_OTHER_STEP and other not in position]
    problems += [f"{later} runs before {earlier}, but {earlier} must run before {later} ({source.name}: "
                 f"{source.order})" for earlier, later, source in constraints(steps)
                 if earlier in position and later in position and position[earlier] > position[later]]
    if problems:
        raise PassOrderError("the pass order is broken:\n  " + "\n  ".join(problems))
    return tuple(steps)


PIPELINE: tuple[Step, ...] = check_order((
    Step(inline_autocast, "first: ops inside an autocast region are invisible to every other step",
         before=(EVERY_OTHER_STEP,)),
    Step(fold_linear_batch_norm, "before batch_norm_to_conv, which would turn the batch norm of a linear -> batch "
         "norm pair into a convolution instead of letting it fold into the linear",
         before=("batch_norm_to_conv",)),
    Step(add_alpha_to_mul, "before int_scalars_to_float, which makes the integer alpha it writes as a multiplier a "
         "float literal", before=("int_scalars_to_float",)),
    Step(int_scalars_to_float, "after add_alpha_to_mul (see there); no later step reads whether a literal is an "
         "integer"),
    Step(remove_noops, "before the rewrites that match patterns over several nodes, which clones, dropouts and "
         "identity views between the nodes hide: batch_norm_to_conv (a batch norm reading a convolution is left "
         "for conv + bn folding), sink_batch_reshapes and permute_rank4 (the reshapes they move and collapse; "
         "permute_rank4 also writes contiguous copies this pass would remove), l2_normalize_decompose (the "
         "norm of the divisor), max_pool_padding (the producers of a pool's input), sink_squeeze (a squeeze and "
         "its reader)",
         before=("batch_norm_to_conv", "sink_batch_reshapes", "permute_rank4", "l2_normalize_decompose",
                 "max_pool_padding", "sink_squeeze")),
    Step(inplace_view_to_functional, "before fold_constants, which folds no constant the graph mutates: an "
         "in-place squeeze_ of a constant is folded once it is functional", before=("fold_constants",)),
    Step(linear_rank1_to_rank2, "before sink_squeeze, which moves the squeeze it writes below an activation "
         "that follows the linear", before=("sink_squeeze",)),
    Step(adaptive_max_pool_decompose, "before pool1d_to_pool2d, which gives the max pool it writes for an "
         "unbatched (C, H, W) input a batch", before=("pool1d_to_pool2d",)),
    Step(adaptive_avg_pool1d_to_2d, "before pool1d_to_pool2d, which gives the 2-D pool it writes for an unbatched "
         "(C, L) input a batch, and adaptive_pool_to_linear, which writes that pool as a fully connected layer "
         "where its output does not divide its input", before=("pool1d_to_pool2d", "adaptive_pool_to_linear")),
    Step(median_to_topk, "any: its topk, slices and reshapes are ops no later step rewrites specially"),
    Step(round_decimals_decompose, "before div_to_mul, which makes the division by 10^d it writes a "
         "multiplication", before=("div_to_mul",)),
    Step(fold_constants, "after remove_noops, which removes the eval-mode dropouts (random ops, never folded) "
         "between a constant and its readers; before the rewrites that need constant operands: "
         "batch_norm_to_conv's statistics, the weights of conv1d_to_conv2d and conv3d_to_conv2d, "
         "group_norm_decompose's affine", after=("remove_noops",),
         before=("batch_norm_to_conv", "conv1d_to_conv2d", "conv3d_to_conv2d", "group_norm_decompose"),
         qat_keyword="keep_parameters"),
    Step(gather_to_slices, "after fold_constants, which makes a constant index a get_attr; before "
         "max_pool_padding, which reads a pool's input through the slices and concatenation it writes",
         after=("fold_constants",), before=("max_pool_padding",)),
    Step(strided_slice_to_reshape, "after fold_constants, which folds a strided slice of a constant outright; "
         "before permute_rank4, whose reshape collapsing merges the reshapes it writes with those around them",
         after=("fold_constants",), before=("permute_rank4",)),
    Step(rnn_unroll, "after fold_constants: a zero initial state is a constant by then, and the terms it "
         "multiplies are dropped", after=("fold_constants",), op_flags=(("with_sub", _edge.sub.Tensor),)),
    Step(split_to_slices, "before permute_rank4, whose reshape collapsing merges the reshape it writes for a "
         "select (attention's q, k, v unbind) with the reshapes around it", before=("permute_rank4",)),
    Step(stack_to_cat, "any: its unsqueezes and concatenation are ops no later step rewrites specially"),
    Step(sdpa_to_matmul, "after fold_constants, which makes a mask computed from shapes (transformers' boolean "
         "mask from arange) a constant it can read; before matmul_to_bmm, which rewrites the matmuls it writes, and "
         "div_by_tensor_to_rsqrt, which writes the row-sum division of a masked softmax from rsqrt",
         after=("fold_constants",), before=("matmul_to_bmm", "div_by_tensor_to_rsqrt"),
         op_flags=(("with_sum", _edge.sum.dim_IntList), ("with_rsqrt", _edge.rsqrt.default))),
    Step(masked_softmax_decompose, "after fold_constants, which makes a mask computed from shapes a constant it "
         "can read; before div_by_tensor_to_rsqrt, which writes the row-sum division it makes from rsqrt",
         after=("fold_constants",), before=("div_by_tensor_to_rsqrt",),
         op_flags=(("with_sum", _edge.sum.dim_IntList), ("with_rsqrt", _edge.rsqrt.default))),
    Step(matmul_to_bmm, "before sink_batch_reshapes, which moves the reshapes it writes around the bmm",
         before=("sink_batch_reshapes",)),
    Step(sink_batch_reshapes, "before permute_rank4, whose reshape collapsing removes the reshapes it brings "
         "together", before=("permute_rank4",)),
    Step(pixel_shuffle_to_permute, "before permute_rank4, which turns the rank-6 permutation it writes into "
         "transposes the NPU runs", before=("permute_rank4",)),
    Step(patch_conv_to_pointwise, "after fold_constants, which makes the convolution's weight the constant it "
         "reshapes; before permute_rank4, which turns the rank-6 permutation of its space-to-depth into transposes "
         "the NPU runs; Ethos-U only (Neutron runs a tiling convolution's large stride itself)",
         after=("fold_constants",), before=("permute_rank4",), backends=frozenset({ETHOS_U})),
    Step(align_corners_resize_to_linear, "after fold_constants, which folds a resize of a constant; before "
         "permute_rank4, which rewrites the transposes it writes as permutations the NPU runs; Ethos-U only "
         "(Neutron resizes with align_corners by 2, 4 or 8 itself)", after=("fold_constants",),
         before=("permute_rank4",), backends=frozenset({ETHOS_U})),
    Step(permute_rank4, "after sdpa_to_matmul, whose transpose of k it rewrites, and after the steps that name it "
         "in their `before` (their reshapes, permutations and views)", after=("sdpa_to_matmul",)),
    Step(remove_bn_counters, "any (QAT graphs only have the counter updates it removes)"),
    Step(batch_norm_to_conv, "after fold_linear_batch_norm, remove_noops and fold_constants (see theirs); before "
         "conv1d_to_conv2d, which makes the 1-D convolution it writes for a rank-3 batch norm 2-D",
         before=("conv1d_to_conv2d",)),
    Step(group_norm_decompose, "after fold_constants (see there); before conv1d_to_conv2d, which makes the 1-D "
         "depthwise convolution of its affine (rank-3 input: group norm, nn.InstanceNorm1d) 2-D; only where the "
         "target's table runs rsqrt (as for layer norm)", before=("conv1d_to_conv2d",),
         needs_ops=(_edge.rsqrt.default,)),
    Step(conv1d_to_conv2d, "after fold_constants (see there); before sink_squeeze, which moves the squeeze it "
         "writes", before=("sink_squeeze",)),
    Step(conv3d_to_conv2d, "after fold_constants (see there); its selects, 2-D convolutions and cats are ops no "
         "later step rewrites specially"),
    Step(pool1d_to_pool2d, "before max_pool_padding, which rewrites the 2-D max pools it writes, and "
         "adaptive_pool_to_linear, which rewrites batched (rank-4) adaptive average pools only",
         before=("max_pool_padding", "adaptive_pool_to_linear")),
    Step(pad_modes_to_cat, "before max_pool_padding, which reads through the slices and concatenations it writes "
         "whether a pool's input cannot be negative", before=("max_pool_padding",)),
    Step(avg_pool_ceil, "after pool1d_to_pool2d (a 1-D average pool is a 2-D one by then)",
         after=("pool1d_to_pool2d",)),
    Step(adaptive_pool_to_linear, "after adaptive_avg_pool1d_to_2d and pool1d_to_pool2d (see theirs); the "
         "reshapes and the fully connected layer it writes are ops no later step rewrites specially"),
    Step(pool3d_to_pool2d, "before max_pool_padding, which rewrites the padded 2-D max pools it writes, and "
         "dilated_max_pool and max_pool_split (see theirs)", before=("max_pool_padding",)),
    Step(dilated_max_pool, "after pool1d_to_pool2d and pool3d_to_pool2d (a dilated 1-D or 3-D pool is a dilated "
         "max_pool2d by then); only where the target's table runs maximum",
         after=("pool1d_to_pool2d", "pool3d_to_pool2d"), needs_ops=(_edge.maximum.default,)),
    Step(max_pool_split, "after adaptive_max_pool_decompose, pool1d_to_pool2d and pool3d_to_pool2d, whose "
         "adaptive, 1-D and 3-D max pools it splits; Ethos-U only (Vela's max-pool strides are 1..3, Neutron runs "
         "larger ones in one pool)", after=("adaptive_max_pool_decompose", "pool1d_to_pool2d", "pool3d_to_pool2d"),
         backends=frozenset({ETHOS_U})),
    Step(mean1d_to_mean2d, "before batch_split (see there)"),
    Step(div_to_mul, "after fold_constants: a divisor computed from constants is a constant by then; after "
         "round_decimals_decompose (see there)", after=("fold_constants",)),
    Step(hardsigmoid_to_conv, "any"),
    Step(glu_to_sigmoid_mul, "any"),
    Step(pow_to_mul, "any"),
    Step(threshold_to_clamp, "before max_pool_padding, which reads whether a pool's input cannot be negative (a "
         "relu's output), and sink_squeeze, which moves a convolution's squeeze below the relu / clamp it writes",
         before=("max_pool_padding", "sink_squeeze")),
    Step(threshold_decompose, "any: its adds, relu, multiplications and clamp are ops no later step rewrites "
         "specially (it takes the thresholds with a jump, v != t, the clamp step the others)"),
    Step(silu_to_sigmoid_mul, "any"),
    Step(gelu_to_sigmoid, "any"),
    Step(log1p_to_log, "any; only where the target's table runs log", needs_ops=(_edge.log.default,)),
    Step(log_sigmoid_decompose, "any; only where the target's table runs exp, log and sub",
         needs_ops=(_edge.exp.default, _edge.log.default, _edge.sub.Tensor)),
    Step(softplus_decompose, "any; only where the target's table runs exp and log (the pieces of logsigmoid's "
         "term it shares), mish only where it also runs tanh",
         needs_ops=(_edge.exp.default, _edge.log.default), op_flags=(("with_tanh", _edge.tanh.default),)),
    Step(elu_decompose, "any (elu, selu, celu); only where the target's table runs exp",
         needs_ops=(_edge.exp.default,)),
    Step(layer_norm_decompose, "before batch_split (see there); only where the target's table runs rsqrt (else "
         "layer norm stays one float op instead of int8 pieces split between NPU and CPU)",
         needs_ops=(_edge.rsqrt.default,)),
    Step(l2_normalize_decompose, "after remove_noops (see there); only where the target's table runs rsqrt and "
         "sum (else F.normalize stays float ops on the CPU instead of int8 pieces split between NPU and CPU)",
         needs_ops=(_edge.rsqrt.default, _edge.sum.dim_IntList)),
    Step(vector_norm_decompose, "after l2_normalize_decompose, which reads the norm F.normalize divides by (one "
         "rsqrt instead of a norm and a division); the squares of a hand-written norm may be pow(x, 2) or x * x, so "
         "it runs before or after the step that writes one as the other; only where the target's table runs rsqrt "
         "and sum",
         after=("l2_normalize_decompose",), needs_ops=(_edge.rsqrt.default, _edge.sum.dim_IntList),
         rewrites=("aten.linalg_vector_norm.default",)),
    Step(cosine_similarity_decompose, "any: its products, sums and rsqrts are ops no later step rewrites "
         "specially; only where the target's table runs rsqrt and sum",
         needs_ops=(_edge.rsqrt.default, _edge.sum.dim_IntList), rewrites=("aten.cosine_similarity.default",)),
    Step(div_by_tensor_to_rsqrt, "after div_to_mul, which makes a division by a constant a multiplication, and "
         "l2_normalize_decompose, which reads F.normalize's division by a norm; only where the target's table runs "
         "rsqrt", after=("div_to_mul", "l2_normalize_decompose"), needs_ops=(_edge.rsqrt.default,)),
    Step(var_decompose, "before batch_split, which gives the means it writes batch 1 on Ethos-U; only where the "
         "target's table runs mean, sub and sum", before=("batch_split",),
         needs_ops=(_edge.mean.dim, _edge.sub.Tensor, _edge.sum.dim_IntList)),
    Step(mean_axis_split, "after mean1d_to_mean2d, which writes the means over a last dim (a group norm's "
         "statistics) as the means over H and W it splits; Ethos-U only (Vela's MEAN reduces at most 4096 elements "
         "along a width axis, Neutron's more)", after=("mean1d_to_mean2d",), backends=frozenset({ETHOS_U})),
    Step(resize_halve_to_pool, "before batch_split, which would otherwise view the resizes it rewrites (an "
         "average pool runs at any batch)", before=("batch_split",)),
    Step(batch_split, "after the rewrites that write the means it views (adaptive_avg_pool1d_to_2d's adaptive "
         "pool, mean1d_to_mean2d's, layer_norm_decompose's spatial ones); Ethos-U only (Vela's MEAN and RESIZE "
         "take batch 1, Neutron's any batch)",
         after=("adaptive_avg_pool1d_to_2d", "mean1d_to_mean2d", "layer_norm_decompose"),
         backends=frozenset({ETHOS_U})),
    Step(upsample_1x1_to_expand, "before expand_to_cat, which writes the expand it makes as concatenations; Neutron "
         "only (Vela resizes a 1 x 1 image itself)", before=("expand_to_cat",), backends=frozenset({NEUTRON})),
    Step(broadcast_operand_to_expand, "after div_to_mul, which makes a division by a constant one of the "
         "multiplications it reads; before expand_to_cat, which writes the expand it makes as concatenations; "
         "Neutron only (Vela broadcasts both operands itself)", after=("div_to_mul",), before=("expand_to_cat",),
         backends=frozenset({NEUTRON})),
    Step(expand_to_cat, "after rnn_unroll, which reads the expand of a step input repeated along time (it projects "
         "that input once)", after=("rnn_unroll",)),
    Step(max_pool_padding, "after the steps that name it in their `before`: those that write the pools it rewrites "
         "and the ops through which it reads whether a pool's input cannot be negative"),
    Step(max_dim_to_amax, "before reduce_all_keepdim, which rewrites the amax / amin it writes when they reduce to "
         "a scalar", before=("reduce_all_keepdim",)),
    Step(reduce_all_keepdim, "after max_dim_to_amax (see there)"),
    Step(sink_squeeze, "after the steps that write the squeezes it moves (conv1d_to_conv2d, linear_rank1_to_rank2) "
         "and the relu / clamp it moves them below (threshold_to_clamp), and after remove_noops (see theirs)"),
))


def unmade_rewrite(aten_op: str, ctx: PassContext) -> str | None:
    """Why `aten_op` (e.g. 'aten.cosine_similarity.default') was not written from table ops for `ctx`: the step
    that writes it and the ops of its `needs_ops` the target's table lacks; None when no step is kept from it."""
    for step in PIPELINE:
        if aten_op in step.rewrites and (step.backends is None or ctx.backend in step.backends):
            missing = [registry.op_name(op) for op in step.needs_ops if not registry.runs(op, ctx.backend, ctx.profile)]
            if missing:
                return (f"{step.name} writes it from int8 table ops where the table runs "
                        f"{' and '.join(missing)}, which this one (constraints={ctx.profile!r}) does not")
    return None


def run_passes(gm: GraphModule, ctx: PassContext = PassContext()) -> GraphModule:
    """Run every step of PIPELINE that applies to `ctx`, in order; returns the rewritten module."""
    for step in PIPELINE:
        if step.applies(ctx):
            gm = step.run(gm, **step.keywords(ctx))
    return gm

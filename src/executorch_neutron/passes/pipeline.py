"""The ATen pass pipeline: every rewrite the quantizer runs before annotation, in one ordered list.

`NeutronQuantizer.transform_for_annotation` calls `run_passes(gm, PassContext(...))`: each `Step` names its pass
once, says why it sits where it does (`order`: the pass it must follow or precede and why; "any" when it has no
ordering constraint), and carries its conditions as data: `qat_keyword` passes the QAT flag to the pass under that
keyword, `backends` limits it to targets of those back-end kinds, `needs_ops` skips the pass when the target's
operator table (for the context's back-end kind and constraint profile) does not run all of those edge ops, since
the rewrite's pieces would then be split between NPU and CPU, and `op_flags` ((keyword, edge op) pairs) tells the
pass under each keyword whether that table runs the op (so it can write the rewrite from ops the table has). The
runner has no special cases. SUPPORTED_OPS.md lists the steps in this order with their docstrings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import GraphModule

from ..ops import registry
from ..target import ETHOS_U, NEUTRON
from .avg_pool_ceil import avg_pool_ceil
from .batch_split import batch_split
from .batch_norm_to_conv import batch_norm_to_conv
from .conv1d_to_conv2d import conv1d_to_conv2d
from .conv3d_to_conv2d import conv3d_to_conv2d
from .core_aten_rewrites import core_aten_rewrites
from .dilated_max_pool import dilated_max_pool
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
from .int_scalars_to_float import int_scalars_to_float
from .l2_normalize_decompose import l2_normalize_decompose
from .layer_norm_decompose import layer_norm_decompose
from .log1p_to_log import log1p_to_log
from .log_sigmoid_decompose import log_sigmoid_decompose
from .matmul_to_bmm import matmul_to_bmm
from .max_pool_padding import max_pool_padding
from .max_dim_to_amax import max_dim_to_amax
from .max_pool_split import max_pool_split
from .mean1d_to_mean2d import mean1d_to_mean2d
from .pad_modes_to_cat import pad_modes_to_cat
from .permute_rank4 import permute_rank4
from .pixel_shuffle_to_permute import pixel_shuffle_to_permute
from .pool1d_to_pool2d import pool1d_to_pool2d
from .pool3d_to_pool2d import pool3d_to_pool2d
from .pow_to_mul import pow_to_mul
from .reduce_all_keepdim import reduce_all_keepdim
from .remove_bn_counters import remove_bn_counters
from .resize_halve_to_pool import resize_halve_to_pool
from .remove_noops import remove_noops
from .rnn_unroll import rnn_unroll
from .sdpa_to_matmul import sdpa_to_matmul
from .silu_to_sigmoid_mul import silu_to_sigmoid_mul
from .sink_batch_reshapes import sink_batch_reshapes
from .sink_squeeze import sink_squeeze
from .softplus_decompose import softplus_decompose
from .split_to_slices import split_to_slices
from .stack_to_cat import stack_to_cat
from .threshold_to_clamp import threshold_to_clamp
from .var_decompose import var_decompose

_edge = exir_ops.edge.aten


@dataclass(frozen=True)
class PassContext:
    """What the conditions of the steps read: QAT or not, the back-end kind of the target (`target.kind`) and the
    constraint profile (`NeutronCompileSpec.constraints`)."""

    is_qat: bool = False
    backend: str = NEUTRON
    profile: str = "sdk-current"


@dataclass(frozen=True)
class Step:
    run: Callable[..., GraphModule]
    order: str
    qat_keyword: str | None = None
    needs_ops: tuple = ()
    op_flags: tuple[tuple[str, object], ...] = ()
    backends: frozenset | None = None  # None: every back end

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


PIPELINE: tuple[Step, ...] = (
    Step(fold_linear_batch_norm, "first, on the graph as exported: a linear -> batch norm pair is folded before "
         "batch_norm_to_conv could turn that batch norm into a convolution"),
    Step(inline_autocast, "before every other rewrite: ops inside an autocast region are invisible to them"),
    Step(int_scalars_to_float, "before the rewrites that read scalar operands (div_to_mul, the activation "
         "decompositions): they then see float literals only"),
    Step(remove_noops, "before the pattern rewrites: clones, dropouts and identity views between ops hide the "
         "patterns they match"),
    Step(core_aten_rewrites, "before fold_constants (an in-place squeeze_ of a constant must be functional before "
         "it is folded) and before pool1d_to_pool2d and max_pool_padding, which rewrite the max pools it writes"),
    Step(fold_constants, "after remove_noops, before the rewrites that need constant operands (div_to_mul's "
         "divisor, batch_norm_to_conv's statistics)", qat_keyword="keep_parameters"),
    Step(gather_to_slices, "after fold_constants, which makes a constant index a get_attr; before split_to_slices "
         "and the other slice readers"),
    Step(rnn_unroll, "after fold_constants: a zero initial state is a constant by then, and the terms it multiplies "
         "are dropped; before the rewrites below, which see its linears, slices and reshapes as any others",
         op_flags=(("with_sub", _edge.sub.Tensor),)),
    Step(split_to_slices, "before sdpa_to_matmul and permute_rank4: attention's q, k, v unbind becomes slices and "
         "reshapes they see as ordinary views"),
    Step(stack_to_cat, "before sink_batch_reshapes and permute_rank4, which see the unsqueezes it writes as "
         "ordinary views"),
    Step(sdpa_to_matmul, "before matmul_to_bmm, which rewrites the matmuls it writes"),
    Step(matmul_to_bmm, "before sink_batch_reshapes, which moves the reshapes it writes around the bmm"),
    Step(sink_batch_reshapes, "before permute_rank4, whose reshape collapsing removes the reshapes it brings "
         "together"),
    Step(pixel_shuffle_to_permute, "before permute_rank4, which turns the rank-6 permutation it writes into "
         "transposes the NPU runs"),
    Step(permute_rank4, "after the attention rewrites above (their permutations and reshapes)"),
    Step(remove_bn_counters, "any (QAT graphs only have the counter updates it removes)"),
    Step(batch_norm_to_conv, "before conv1d_to_conv2d, which makes the 1-D convolution it writes for a rank-3 "
         "batch norm 2-D"),
    Step(group_norm_decompose, "before conv1d_to_conv2d, which makes the 1-D depthwise convolution of its affine "
         "(rank-3 input: group norm, nn.InstanceNorm1d) 2-D; only where the target's table runs rsqrt (as layer_norm_decompose)",
         needs_ops=(_edge.rsqrt.default,)),
    Step(conv1d_to_conv2d, "before sink_squeeze, which moves the squeeze it writes"),
    Step(conv3d_to_conv2d, "any: its selects, 2-D convolutions and cats are ops no later step rewrites specially"),
    Step(pool1d_to_pool2d, "before max_pool_padding, which rewrites the 2-D max pools it writes"),
    Step(pad_modes_to_cat, "any"),
    Step(avg_pool_ceil, "after pool1d_to_pool2d (a 1-D average pool is a 2-D one by then)"),
    Step(pool3d_to_pool2d, "before dilated_max_pool, max_pool_split and max_pool_padding, which rewrite the 2-D max "
         "pools it writes (a dilated 3-D pool gives dilated 2-D pools)"),
    Step(dilated_max_pool, "after pool1d_to_pool2d and pool3d_to_pool2d (a dilated 1-D or 3-D pool is a max_pool2d "
         "by then); only where the target's table runs maximum", needs_ops=(_edge.maximum.default,)),
    Step(max_pool_split, "after core_aten_rewrites, pool1d_to_pool2d, dilated_max_pool and pool3d_to_pool2d, whose "
         "adaptive, 1-D, subsampling and 3-D max pools it splits; Ethos-U only (Vela's max-pool strides are 1..3, "
         "Neutron runs larger ones in one pool)", backends=frozenset({ETHOS_U})),
    Step(mean1d_to_mean2d, "any"),
    Step(div_to_mul, "after fold_constants: a divisor computed from constants is a constant by then"),
    Step(hardsigmoid_to_conv, "any"),
    Step(glu_to_sigmoid_mul, "any"),
    Step(pow_to_mul, "any"),
    Step(threshold_to_clamp, "before max_pool_padding, which reads whether a pool's input cannot be negative (a "
         "relu's output)"),
    Step(silu_to_sigmoid_mul, "before max_pool_padding, which reads whether a pool's input cannot be negative "
         "(a sigmoid's output)"),
    Step(gelu_to_sigmoid, "before max_pool_padding (as silu_to_sigmoid_mul)"),
    Step(log1p_to_log, "any; only where the target's table runs log", needs_ops=(_edge.log.default,)),
    Step(log_sigmoid_decompose, "any; only where the target's table runs exp, log and sub",
         needs_ops=(_edge.exp.default, _edge.log.default, _edge.sub.Tensor)),
    Step(softplus_decompose, "before max_pool_padding, which reads whether a pool's input cannot be negative (the "
         "relu it writes); only where the target's table runs exp and log (as log_sigmoid_decompose, whose term it "
         "shares), mish only where it also runs tanh",
         needs_ops=(_edge.exp.default, _edge.log.default), op_flags=(("with_tanh", _edge.tanh.default),)),
    Step(elu_decompose, "(elu, selu, celu) before max_pool_padding, which reads whether a pool's input cannot be negative (the relu "
         "it writes); only where the target's table runs exp", needs_ops=(_edge.exp.default,)),
    Step(layer_norm_decompose, "any; only where the target's table runs rsqrt (else layer norm stays one float op "
         "instead of int8 pieces split between NPU and CPU)", needs_ops=(_edge.rsqrt.default,)),
    Step(l2_normalize_decompose, "any; only where the target's table runs rsqrt and sum (else F.normalize stays "
         "float ops on the CPU instead of int8 pieces split between NPU and CPU)",
         needs_ops=(_edge.rsqrt.default, _edge.sum.dim_IntList)),
    Step(var_decompose, "before batch_split, which gives the means it writes batch 1 on Ethos-U; only where the "
         "target's table runs mean, sub and sum", needs_ops=(_edge.mean.dim, _edge.sub.Tensor, _edge.sum.dim_IntList)),
    Step(resize_halve_to_pool, "before batch_split, which would otherwise view the resizes it rewrites (an "
         "average pool runs at any batch)"),
    Step(batch_split, "after the rewrites that write means and resizes (core_aten_rewrites, mean1d_to_mean2d, the "
         "norm decompositions); Ethos-U only (Vela's MEAN and RESIZE take batch 1, Neutron's any batch)",
         backends=frozenset({ETHOS_U})),
    Step(expand_to_cat, "after rnn_unroll and l2_normalize_decompose, which read the expands they meet"),
    Step(max_pool_padding, "after the pool and activation rewrites above (it reads its input's producers)"),
    Step(max_dim_to_amax, "before reduce_all_keepdim, which rewrites the amax / amin it writes when they reduce to "
         "a scalar"),
    Step(reduce_all_keepdim, "any"),
    Step(sink_squeeze, "last: moves the squeezes of conv1d_to_conv2d below the batch norm / activation that "
         "follows the conv, once no pass rewrites them any more"),
)


def run_passes(gm: GraphModule, ctx: PassContext = PassContext()) -> GraphModule:
    """Run every step of PIPELINE that applies to `ctx`, in order; returns the rewritten module."""
    for step in PIPELINE:
        if step.applies(ctx):
            gm = step.run(gm, **step.keywords(ctx))
    return gm

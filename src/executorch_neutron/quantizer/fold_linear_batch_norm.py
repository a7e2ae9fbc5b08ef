"""Graph pass: fold a BatchNorm1d that follows a linear layer into the linear's weight and bias.

`prepare_pt2e` already folds conv+bn and linear+bn (with running statistics) before annotation, and
`prepare_qat_pt2e` rewrites conv+bn into its QAT form itself; linear+bn is left alone there. The quantizer runs
this pass in `transform_for_annotation` so that linear+bn reaches the annotator as one linear in both flows.

Folding uses the running statistics: y = (W x + b - mean) * gamma / sqrt(var + eps) + beta. In QAT the batch
norm is therefore frozen from this point on (its statistics no longer update; gamma and beta are trained
through the folded weight and bias). Only 2-D linear inputs are folded: for (N, C, L) inputs BatchNorm1d acts
on dim 1 while linear acts on the last dim, so the two do not compose.
"""

from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node

from ..passes.fx_utils import constant, new_parameter

aten = torch.ops.aten

_BN_EPS_INDEX = {aten.batch_norm.default: 7, aten._native_batch_norm_legit_no_training.default: 6}


def _constant(gm: GraphModule, node: object) -> torch.Tensor | None:
    value = constant(gm, node)
    return None if value is None else value.detach()


def _bn_output_users(bn: Node) -> list[Node] | None:
    """Nodes that read the normalized tensor: the bn node itself, or its getitem(0) for the 3-output variant."""
    if bn.target == aten.batch_norm.default:
        return [bn]
    outs = [u for u in bn.users]
    if not all(u.target is operator.getitem for u in outs):
        return None
    if any(u.args[1] != 0 and len(u.users) > 0 for u in outs):
        return None  # mean/invstd outputs used: cannot remove
    return [u for u in outs if u.args[1] == 0]


def fold_linear_batch_norm(gm: GraphModule) -> GraphModule:
    """Fold every linear -> batch_norm pair with constant parameters (in place); returns `gm`."""
    for bn in list(gm.graph.nodes):
        if bn.op != "call_function" or bn.target not in _BN_EPS_INDEX:
            continue
        linear = bn.args[0]
        if not (isinstance(linear, Node) and linear.target == aten.linear.default and len(linear.users) == 1):
            continue
        x_val = linear.args[0].meta.get("val") if isinstance(linear.args[0], Node) else None
        if x_val is None or x_val.dim() != 2:
            continue
        w = _constant(gm, linear.args[1])
        b_node = linear.args[2] if len(linear.args) > 2 else None
        b = _constant(gm, b_node)
        gamma, beta, mean, var = (_constant(gm, a) for a in bn.args[1:5])
        if w is None or (b_node is not None and b is None) or mean is None or var is None:
            continue
        readers = _bn_output_users(bn)
        if readers is None:
            continue
        eps = bn.args[_BN_EPS_INDEX[bn.target]] if len(bn.args) > _BN_EPS_INDEX[bn.target] else 1e-5
        gamma = torch.ones_like(mean) if gamma is None else gamma
        beta = torch.zeros_like(mean) if beta is None else beta
        b = torch.zeros_like(mean) if b is None else b
        factor = gamma / torch.sqrt(var + eps)
        new_w = w * factor.reshape(-1, 1)
        new_b = (b - mean) * factor + beta

        with gm.graph.inserting_before(linear):
            w_attr = new_parameter(gm, "_neutron_bn_folded_weight", new_w, linear.args[1])
            b_attr = new_parameter(gm, "_neutron_bn_folded_bias", new_b, linear.args[1])
        linear.args = (linear.args[0], w_attr, b_attr, *linear.args[3:])
        for reader in readers:
            reader.replace_all_uses_with(linear)
        for reader in readers:
            if reader is not bn and not reader.users:
                gm.graph.erase_node(reader)
        for leftover in [u for u in bn.users if not u.users]:
            gm.graph.erase_node(leftover)
        if not bn.users:
            gm.graph.erase_node(bn)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm

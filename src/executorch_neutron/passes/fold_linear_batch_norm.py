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

import torch
from torch.fx import GraphModule, Node

from .fx_utils import BN_EPS_INDEX, bn_affine, bn_output_readers, constant, new_parameter, replace_bn

aten = torch.ops.aten


def fold_linear_batch_norm(gm: GraphModule) -> GraphModule:
    """Fold every linear -> batch_norm pair with constant parameters (in place); returns `gm`."""
    for bn in list(gm.graph.nodes):
        if bn.op != "call_function" or bn.target not in BN_EPS_INDEX:
            continue
        linear = bn.args[0]
        if not (isinstance(linear, Node) and linear.target == aten.linear.default and len(linear.users) == 1):
            continue
        x_val = linear.args[0].meta.get("val") if isinstance(linear.args[0], Node) else None
        if x_val is None or x_val.dim() != 2:
            continue
        w = constant(gm, linear.args[1])
        b_node = linear.args[2] if len(linear.args) > 2 else None
        b = constant(gm, b_node)
        affine = bn_affine(gm, bn)
        if w is None or (b_node is not None and b is None) or affine is None:
            continue
        readers = bn_output_readers(bn)
        if readers is None:
            continue
        factor, shift = affine
        new_w = w.detach() * factor.reshape(-1, 1)
        new_b = (torch.zeros_like(factor) if b is None else b.detach()) * factor + shift

        with gm.graph.inserting_before(linear):
            w_attr = new_parameter(gm, "_neutron_bn_folded_weight", new_w, linear.args[1])
            b_attr = new_parameter(gm, "_neutron_bn_folded_bias", new_b, linear.args[1])
        linear.args = (linear.args[0], w_attr, b_attr, *linear.args[3:])
        replace_bn(gm, bn, readers, linear)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm

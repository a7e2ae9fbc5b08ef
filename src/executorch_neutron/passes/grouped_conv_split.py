"""ATen pass: grouped convolution (groups neither 1 nor the input channels) -> per-group convolutions + cat.

Neutron runs convolutions with groups 1 or depthwise ones. A grouped convolution (ResNeXt, RegNetX) is the
concatenation of `groups` ordinary convolutions, each on its slice of the input channels:
    conv(x, W, b, groups=g) = cat([conv(x[:, i*ci:(i+1)*ci], W[i*co:(i+1)*co], b[i*co:(i+1)*co]) for i], dim=1)
A following eval-mode batch norm is folded into each group's weights and bias first (prepare_pt2e only folds a
batch norm that directly follows a convolution), and a following relu / relu6 / hardtanh / clamp moves into every
group (it is elementwise), so each group is one int8 conv with a fused activation. The concatenation shares one
quantization (NeutronQuantizer), so it is exact. Split only when the result can run on the NPU: each group's
output channels a multiple of 8 (the cat constraint; the smallest `num_macs` of the targets). Runs before
quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_utils import arg, call, constant, finish, new_parameter

aten = torch.ops.aten
CHANNEL_UNIT = 8  # cat: channels % num_macs == 0; the partitioner checks the real target's num_macs
_ACTIVATIONS = {aten.relu.default, aten.relu_.default, aten.relu6.default, aten.hardtanh.default,
                aten.hardtanh_.default, aten.clamp.default, aten.clamp_.default}


def _only_user(node):
    return next(iter(node.users)) if len(node.users) == 1 else None


def _fold_batch_norm(gm, bn, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(weight, bias) of conv followed by the eval-mode batch norm `bn`, or None when it cannot be folded."""
    if arg(bn, "training"):
        return None
    gamma, beta, mean, var = (constant(gm, arg(bn, n)) for n in ("weight", "bias", "running_mean", "running_var"))
    if mean is None or var is None:
        return None
    scale = torch.rsqrt(var + float(arg(bn, "eps")))
    if gamma is not None:
        scale = scale * gamma
    bias = (b - mean) * scale + (beta if beta is not None else 0.0)
    return w * scale.reshape(-1, 1, 1, 1), bias


def grouped_conv_split(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.conv2d.default:
            continue
        x, groups = node.args[0], int(arg(node, "groups"))
        val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        w, b_node = constant(gm, node.args[1]), arg(node, "bias")
        b = constant(gm, b_node) if b_node is not None else None
        if val is None or val.dim() != 4 or groups in (1, int(val.shape[1])) or w is None:
            continue
        if b_node is not None and b is None:
            continue
        co, ci = w.shape[0] // groups, int(val.shape[1]) // groups
        if co % CHANNEL_UNIT:
            continue
        w = w.detach()
        b = b.detach() if b is not None else torch.zeros(w.shape[0])
        last, bn = node, _only_user(node)
        if bn is not None and bn.target == aten.batch_norm.default:
            folded = _fold_batch_norm(gm, bn, w, b)
            if folded is None:
                continue
            (w, b), last = folded, bn
        act = _only_user(last)
        act = act if act is not None and act.target in _ACTIVATIONS and act.args[0] is last else None
        stride, padding, dilation = (arg(node, n) for n in ("stride", "padding", "dilation"))
        pieces = []
        with gm.graph.inserting_before(node):
            for i in range(groups):
                xs = call(gm, aten.slice.Tensor, (x, 1, i * ci, (i + 1) * ci), node)
                wi = new_parameter(gm, "_neutron_group_w", w[i * co:(i + 1) * co], node.args[1])
                bi = new_parameter(gm, "_neutron_group_b", b[i * co:(i + 1) * co], node.args[1])
                y = call(gm, aten.conv2d.default, (xs, wi, bi, stride, padding, dilation, 1), node)
                if act is not None:
                    y = call(gm, act.target, (y, *act.args[1:]), act)
                pieces.append(y)
            out = call(gm, aten.cat.default, (pieces, 1), node)
        end = act if act is not None else last
        end.replace_all_uses_with(out)
        for dead in (act, bn if last is bn else None, node):
            if dead is not None:
                gm.graph.erase_node(dead)
    return finish(gm)

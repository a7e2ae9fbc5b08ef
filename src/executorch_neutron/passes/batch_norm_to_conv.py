"""ATen pass: a batch norm with no convolution before it -> depthwise 1x1 convolution (per-channel scale + shift).

In inference a batch norm is y = x * scale + shift per channel (scale = gamma / sqrt(var + eps), shift = beta -
mean * scale). After a convolution `prepare_pt2e` folds it into the conv's weights; anywhere else (MixNet's batch
norm after the cat of its mixed-kernel depthwise convs, a norm on the input, after an add) ExecuTorch would run it
in float on the CPU. As a depthwise 1x1 conv (weight `scale`, bias `shift`; rank 3 as a 1-D conv, which the
conv1d pass makes 2-D; rank 2, a BatchNorm1d on [N, C] such as the one before EfficientViT's classifier, as a
1-D conv between two reshapes) it is one int8 op that Neutron runs in the partition of its neighbours; the weights are
quantized per channel like any conv's and PyTorch's quantized model computes the same rewritten graph. A batch
norm whose input is a convolution is left for the conv+bn folding (PTQ and QAT); one in training mode, or with
non-constant statistics, is left alone. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import BN_EPS_INDEX, bn_affine, bn_output_readers, call, finish, new_parameter, replace_bn

aten = torch.ops.aten
_CONVS = (aten.conv1d.default, aten.conv2d.default, aten.convolution.default, aten.conv1d.padding,
          aten.conv2d.padding)
_CONV_FOR_RANK = {3: aten.conv1d.default, 4: aten.conv2d.default}


def batch_norm_to_conv(gm: GraphModule) -> GraphModule:
    for bn in list(gm.graph.nodes):
        if bn.op != "call_function" or bn.target not in BN_EPS_INDEX:
            continue
        if bn.target == aten.batch_norm.default and bn.args[5]:
            continue  # training mode: batch statistics
        x = bn.args[0]
        val = x.meta.get("val") if isinstance(x, Node) else None
        if val is None or val.dim() not in (2, *_CONV_FOR_RANK) or not val.is_floating_point() or (
                x.op == "call_function" and x.target in _CONVS):
            continue
        affine, readers = bn_affine(gm, bn), bn_output_readers(bn)
        if affine is None or readers is None:
            continue
        scale, shift = affine
        rank = max(val.dim(), 3)
        with gm.graph.inserting_before(bn):
            w = new_parameter(gm, "_neutron_bn_scale", scale.reshape(-1, *([1] * (rank - 1))), x)
            b = new_parameter(gm, "_neutron_bn_shift", shift, x)
            ones, zeros = [1] * (rank - 2), [0] * (rank - 2)
            src = x if val.dim() == rank else call(gm, aten.reshape.default, (x, [*val.shape, 1]), bn)
            conv = call(gm, _CONV_FOR_RANK[rank], (src, w, b, ones, zeros, ones, int(val.shape[1])), bn)
            if val.dim() != rank:
                conv = call(gm, aten.reshape.default, (conv, list(val.shape)), bn)
        replace_bn(gm, bn, readers, conv)
    return finish(gm)

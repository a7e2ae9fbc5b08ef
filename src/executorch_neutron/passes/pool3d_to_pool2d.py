"""ATen pass: max_pool3d / avg_pool3d / adaptive_avg_pool3d over (D, H, W) -> the 2-D pool over (H, W) of the
D planes, then the 2-D pool over D of the result viewed as (D, H'*W'), and a reshape to (D', H', W').

A pool over a box is separable: the box is a product of one window per axis (padding and ceil_mode decide each
axis's windows on their own), a maximum over it is the maximum over D of the maxima over (H, W), and an average is
the average over D of the averages over (H, W), since PyTorch's divisor is the product of per-axis counts with or
without `count_include_pad` (adaptive windows too). So the two 2-D pools compute the 3-D one exactly in float;
in int8 the intermediate (quantized like the pool's input) adds one rounding. Neutron and Ethos-U have 2-D pools
only, and ExecuTorch's portable kernels no 3-D max pool. The planes of every leading dim (N, C) are stacked as
channels of one image, so the 2-D pools see batch 1. Not rewritten: `divisor_override` (no per-axis split),
`return_indices`, an adaptive pool whose output does not divide its input (overlapping windows, which no NPU pool
takes; ExecuTorch's portable kernels have no 2-D adaptive average pool to fall back on). Runs before quantization (NeutronQuantizer.transform_for_annotation).
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, finish

aten = torch.ops.aten


def _triple(v, default) -> list[int]:
    v = default if v is None or (isinstance(v, (list, tuple)) and len(v) == 0) else v
    v = [int(i) for i in v] if isinstance(v, (list, tuple)) else [int(v)]
    return v * 3 if len(v) == 1 else v


def _pools(node: Node, dhw: list[int]):
    """(the 2-D pool over H, W as (target, args after the input), the 2-D pool over D likewise), or None."""
    if node.target == aten.max_pool3d.default:
        k = _triple(arg(node, "kernel_size"), None)
        s, p = _triple(arg(node, "stride"), k), _triple(arg(node, "padding"), 0)
        d, ceil = _triple(arg(node, "dilation"), 1), bool(arg(node, "ceil_mode"))
        op = aten.max_pool2d.default
        return ((op, (k[1:], s[1:], p[1:], d[1:], ceil)), (op, ([k[0], 1], [s[0], 1], [p[0], 0], [d[0], 1], ceil)))
    if node.target == aten.avg_pool3d.default:
        if arg(node, "divisor_override") is not None:
            return None
        k = _triple(arg(node, "kernel_size"), None)
        s, p = _triple(arg(node, "stride"), k), _triple(arg(node, "padding"), 0)
        ceil, incl = bool(arg(node, "ceil_mode")), bool(arg(node, "count_include_pad"))
        op = aten.avg_pool2d.default
        return ((op, (k[1:], s[1:], p[1:], ceil, incl)), (op, ([k[0], 1], [s[0], 1], [p[0], 0], ceil, incl)))
    if node.target == aten.adaptive_avg_pool3d.default:
        out = [o if o is not None else i for o, i in zip(_triple(arg(node, "output_size"), None), dhw)]
        if any(i % o for i, o in zip(dhw, out)):
            return None  # overlapping windows: no NPU pool takes them, and the CPU has no 2-D adaptive kernel
        op = aten.adaptive_avg_pool2d.default
        return (op, (out[1:],)), (op, ([out[0], out[1] * out[2]],))
    return None


def pool3d_to_pool2d(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        x = node.args[0] if node.args else None
        val, out = (x.meta.get("val") if isinstance(x, Node) else None), node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.dim() not in (4, 5) or not isinstance(out, torch.Tensor):
            continue
        lead, dhw = list(val.shape[:-3]), list(val.shape[-3:])
        pools = _pools(node, dhw)
        if pools is None:
            continue
        (hw_op, hw_args), (d_op, d_args) = pools
        n = math.prod(lead)
        with gm.graph.inserting_before(node):
            planes = call(gm, aten.reshape.default, (x, [1, n * dhw[0], dhw[1], dhw[2]]), node)
            hw = call(gm, hw_op, (planes, *hw_args), node)
            ho, wo = hw.meta["val"].shape[-2:]
            depth = call(gm, aten.reshape.default, (hw, [1, n, dhw[0], ho * wo]), node)
            d = call(gm, d_op, (depth, *d_args), node)
            result = call(gm, aten.reshape.default, (d, list(out.shape)), node)
        node.replace_all_uses_with(result)
        gm.graph.erase_node(node)
    return finish(gm)

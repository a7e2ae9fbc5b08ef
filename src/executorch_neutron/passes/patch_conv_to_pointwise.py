"""ATen pass (Ethos-U targets): a convolution whose windows tile its input (kernel == stride, no padding, no
dilation, one group) with a stride above 3 -> a space-to-depth of the input and a 1x1 convolution.

A vision transformer's patch embedding is such a convolution (ViT: 16x16 patches with stride 16; 8x8 on a 32x32
image). Vela runs convolution strides 1..3 only where the output is more than one row high ("Stride H must be in
the range [1, 3]"). Each output pixel reads one k_h x k_w tile of every input channel and no tile twice, so

    conv(x, w, stride=k)  ==  conv1x1(space_to_depth(x, k), w.reshape(O, C * k_h * k_w, 1, 1))

with space_to_depth as pixel_unshuffle orders its channels (channel, row in the tile, column in the tile):
[N, C, H, W] -> [N, C, Ho, k_h, Wo, k_w] -> permute(0, 1, 3, 5, 2, 4) -> [N, C * k_h * k_w, Ho, Wo]. The
reshapes and the permutation move data (they share the input's quantization); the 1x1 convolution's weight is
the same tensor, so each output channel keeps its weights and their per-channel scale (the same int8 weights),
and each output sums the same products in int32: the same numbers. permute_rank4 then writes the rank-6
permutation as transposes the NPU runs. A tile that does not divide the input (the rows or columns a VALID
convolution drops) is sliced off first. Neutron runs such strides in one convolution, so the pipeline applies
this to Ethos-U targets only. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, constant, new_parameter, rewrite_calls

aten = torch.ops.aten
MAX_STRIDE = 3  # Vela's convolution stride range is [1, 3] (ethos_u/constraints.py: STRIDE_RANGE)


def _tiling(node: Node, gm: GraphModule) -> tuple[int, int] | None:
    """(k_h, k_w) when the convolution's windows tile its input with a stride Vela refuses (above MAX_STRIDE along
    an axis where the output is longer than 1), else None."""
    x, w = arg(node, "input"), constant(gm, arg(node, "weight"))
    val = x.meta.get("val") if isinstance(x, Node) else None
    if val is None or val.dim() != 4 or w is None or w.dim() != 4 or arg(node, "groups") != 1:
        return None
    k = tuple(int(d) for d in w.shape[2:])
    stride, padding, dilation = (_pair(arg(node, n)) for n in ("stride", "padding", "dilation"))
    if stride != k or any(padding) or dilation != (1, 1):
        return None
    out = [int(size) // kk for size, kk in zip(val.shape[2:], k)]
    refused = any(kk > MAX_STRIDE and o > 1 for kk, o in zip(k, out))
    return k if refused and min(out) >= 1 else None


def _pair(v) -> tuple[int, int]:
    v = [int(d) for d in (v if isinstance(v, (list, tuple)) else [v])]
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def space_to_depth(gm: GraphModule, x: Node, k: tuple[int, int], like: Node) -> Node:
    """[N, C, H, W] -> [N, C * k_h * k_w, H // k_h, W // k_w], channels ordered (channel, tile row, tile column);
    rows and columns beyond the last whole tile are dropped."""
    n, c, h, w = (int(d) for d in x.meta["val"].shape)
    ho, wo = h // k[0], w // k[1]
    for axis, size, keep in ((2, h, ho * k[0]), (3, w, wo * k[1])):
        if keep != size:
            x = call(gm, aten.slice.Tensor, (x, axis, 0, keep), like)
    tiles = call(gm, aten.reshape.default, (x, [n, c, ho, k[0], wo, k[1]]), like)
    moved = call(gm, aten.permute.default, (tiles, [0, 1, 3, 5, 2, 4]), like)
    return call(gm, aten.reshape.default, (moved, [n, c * k[0] * k[1], ho, wo]), like)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    k = _tiling(node, gm)
    if k is None:
        return None
    w_node = arg(node, "weight")
    w = constant(gm, w_node).detach()
    pointwise = new_parameter(gm, "_neutron_patch_weight", w.reshape(w.shape[0], -1, 1, 1), w_node)
    x = space_to_depth(gm, arg(node, "input"), k, node)
    return call(gm, aten.conv2d.default, (x, pointwise, arg(node, "bias"), [1, 1], [0, 0], [1, 1], 1), node)


def patch_conv_to_pointwise(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.conv2d.default, _rewrite)

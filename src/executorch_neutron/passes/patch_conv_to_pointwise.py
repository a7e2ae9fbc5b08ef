"""ATen pass (Ethos-U targets): a convolution (2-D, or 1-D as audio models write it) whose windows tile its input
(kernel == stride, no padding, no dilation, one group) with a stride above 3 -> a space-to-depth of the input and a
1x1 convolution.

A vision transformer's patch embedding is such a convolution (ViT: 16x16 patches with stride 16; 8x8 on a 32x32
image), and so is a layer of an audio model's feature encoder (Wav2Vec2 with conv_kernel 4 and conv_stride 4, a
1-D convolution over 319 frames). Vela runs convolution strides 1..3 only where the output is more than one row
high ("Stride H must be in the range [1, 3]"). Each output pixel reads one k_h x k_w tile of every input channel and no tile twice, so

    conv(x, w, stride=k)  ==  conv1x1(space_to_depth(x, k), w.reshape(O, C * k_h * k_w, 1, 1))

with space_to_depth as pixel_unshuffle orders its channels (channel, row in the tile, column in the tile):
[N, C, H, W] -> [N, C, Ho, k_h, Wo, k_w] -> permute(0, 1, 3, 5, 2, 4) -> [N, C * k_h * k_w, Ho, Wo]. The
reshapes and the permutation move data (they share the input's quantization); the 1x1 convolution's weight is
the same tensor, so each output channel keeps its weights and their per-channel scale (the same int8 weights),
and each output sums the same products in int32: the same numbers. permute_rank4 then writes the rank-6
permutation as transposes the NPU runs. A tile that does not divide the input (the rows or columns a VALID
convolution drops) is sliced off first. A 1-D convolution is the same with one spatial axis:
[N, C, W] -> [N, C, Wo, k] -> permute(0, 1, 3, 2) -> [N, C * k, Wo]. Neutron runs such strides in one convolution, so the pipeline applies
this to Ethos-U targets only. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, constant, new_parameter, rewrite_calls

aten = torch.ops.aten
MAX_STRIDE = 3  # Vela's convolution stride range is [1, 3] (ethos_u/constraints.py: STRIDE_RANGE)


_CONVS = {aten.conv1d.default: 1, aten.conv2d.default: 2}  # op -> its spatial axes


def _tiling(node: Node, gm: GraphModule) -> tuple[int, ...] | None:
    """The kernel (one size per spatial axis) when the convolution's windows tile its input with a stride Vela
    refuses (above MAX_STRIDE along an axis where the output is longer than 1), else None."""
    d = _CONVS[node.target]
    x, w = arg(node, "input"), constant(gm, arg(node, "weight"))
    val = x.meta.get("val") if isinstance(x, Node) else None
    if val is None or val.dim() != d + 2 or w is None or w.dim() != d + 2 or arg(node, "groups") != 1:
        return None
    k = tuple(int(s) for s in w.shape[2:])
    stride, padding, dilation = (_spatial(arg(node, n), d) for n in ("stride", "padding", "dilation"))
    if isinstance(padding, str) or stride != k or any(padding) or any(v != 1 for v in dilation):
        return None
    out = [int(size) // kk for size, kk in zip(val.shape[2:], k)]
    refused = any(kk > MAX_STRIDE and o > 1 for kk, o in zip(k, out))
    return k if refused and min(out) >= 1 else None


def _spatial(v, d: int):
    """A stride, padding or dilation argument as one int per spatial axis (a padding mode string as it is)."""
    if isinstance(v, str):
        return v
    v = [int(s) for s in (v if isinstance(v, (list, tuple)) else [v])]
    return tuple(v * d if len(v) == 1 else v)


def space_to_depth(gm: GraphModule, x: Node, k: tuple[int, ...], like: Node) -> Node:
    """[N, C, *S] -> [N, C * prod(k), *(S // k)] for one or two spatial axes, channels ordered (channel, tile row,
    tile column); rows and columns beyond the last whole tile are dropped."""
    n, c, *sizes = (int(s) for s in x.meta["val"].shape)
    out = [size // kk for size, kk in zip(sizes, k)]
    for axis, (size, o, kk) in enumerate(zip(sizes, out, k), start=2):
        if o * kk != size:
            x = call(gm, aten.slice.Tensor, (x, axis, 0, o * kk), like)
    d = len(k)
    tiles = call(gm, aten.reshape.default, (x, [n, c] + [s for pair in zip(out, k) for s in pair]), like)
    order = [0, 1] + [3 + 2 * i for i in range(d)] + [2 + 2 * i for i in range(d)]
    moved = call(gm, aten.permute.default, (tiles, order), like)
    depth = c
    for kk in k:
        depth *= kk
    return call(gm, aten.reshape.default, (moved, [n, depth] + out), like)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    k = _tiling(node, gm)
    if k is None:
        return None
    d = len(k)
    w_node = arg(node, "weight")
    w = constant(gm, w_node).detach()
    pointwise = new_parameter(gm, "_neutron_patch_weight", w.reshape(w.shape[0], -1, *[1] * d), w_node)
    x = space_to_depth(gm, arg(node, "input"), k, node)
    ones, zeros = [1] * d, [0] * d
    return call(gm, node.target, (x, pointwise, arg(node, "bias"), ones, zeros, ones, 1), node)


def patch_conv_to_pointwise(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, tuple(_CONVS), _rewrite)

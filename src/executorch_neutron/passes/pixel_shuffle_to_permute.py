"""ATen pass: pixel_shuffle / pixel_unshuffle -> reshape, permute, reshape (what they are: data movement).

    pixel_shuffle(x, r):   [B, C*r*r, H, W] -> [B, C, r, r, H, W] -> permute(0, 1, 4, 2, 5, 3) -> [B, C, H*r, W*r]
    pixel_unshuffle(x, r): [B, C, H*r, W*r] -> [B, C, H, r, W, r] -> permute(0, 1, 3, 5, 2, 4) -> [B, C*r*r, H, W]

The rank-6 permutation is then made into transposes the NPU runs by permute_rank4 (which must run after this
pass), so super-resolution heads and space-to-depth stems stay int8 on the NPU with the input's quantization
(no arithmetic: exact). TFLite's DEPTH_TO_SPACE / SPACE_TO_DEPTH order the channels the other way round (the
r*r offset outermost), so they are not used. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _shapes(kind, shape: list[int], r: int):
    """(the rank-6 view, the permutation, the result shape) of a shuffle of a [B, C, H, W] tensor."""
    b, c, h, w = shape
    if kind == aten.pixel_shuffle.default:
        return [b, c // (r * r), r, r, h, w], [0, 1, 4, 2, 5, 3], [b, c // (r * r), h * r, w * r]
    return [b, c, h // r, r, w // r, r], [0, 1, 3, 5, 2, 4], [b, c * r * r, h // r, w // r]


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    if val is None or val.dim() != 4:
        return None
    view, perm, out = _shapes(node.target, list(val.shape), int(node.args[1]))
    p = call(gm, aten.permute.default, (call(gm, aten.reshape.default, (x, view), node), perm), node)
    return call(gm, aten.reshape.default, (p, out), node)


def pixel_shuffle_to_permute(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.pixel_shuffle.default, aten.pixel_unshuffle.default), _rewrite)

"""ATen pass (Ethos-U): a bilinear resize with align_corners=True that Vela refuses -> one fully connected layer per
resized axis, with the interpolation weights as constants.

With align_corners, output pixel j of an axis resized from n to m samples the input at j * (n - 1) / (m - 1): a
constant linear map of that axis (an m x n matrix, two weights per row, summing to 1). The pass writes it as a
linear along W, then a transpose, a linear along H and the transpose back; Vela runs fully connected layers and
transposes, while it resizes with align_corners only when (m - 1) / (n - 1) is 2, 4 or 8 on both axes (the x2
upsampling of a PyTorch model, n -> 2n, is not; nor is any downscaling). Every linear it writes shares the resize
input's quantization (the `SHARE_INPUT_QPARAMS` flag the quantizer reads), as PyTorch's quantized resize does: each
row is a convex combination, so the intermediate never leaves the input's range. The weights are fractions
k / (m - 1); an extra input column of zeros whose weight is 127 / (m - 1) gives every row the int8 scale 1 / (m - 1),
so the weights are exact integers (m <= 128). Then the first rounding moves each value by at most half a step, the
convex combination of the second axis keeps that bound and its rounding adds at most half a step: the result is
within 1 step of the exact value, which PyTorch's quantized resize rounds once (half a step), so the two differ by
at most 1 step. Runs before quantization, on Ethos-U targets only (Neutron resizes with align_corners by 2, 4 or 8).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import SHARE_INPUT_QPARAMS, arg, call, new_parameter, rewrite_calls

aten = torch.ops.aten

#: Vela resizes with align_corners itself when (m - 1) / (n - 1) is one of these, equal on both axes
_VELA_FACTORS = (2, 4, 8)
#: int8 weights k of scale 1 / (m - 1) need m - 1 <= 127
_MAX_OUT = 128


def interpolation_matrix(n: int, m: int) -> torch.Tensor:
    """The m x (n + 1) align-corners interpolation weights of an axis resized from n to m, and a last column
    127 / (m - 1) (it reads a zero column) that makes the row maxima, and so their int8 scales, 127 / (m - 1)."""
    a = torch.zeros(m, n + 1, dtype=torch.float64)
    for j in range(m):
        i, k = divmod(j * (n - 1), m - 1)  # position j * (n - 1) / (m - 1) = i + k / (m - 1)
        a[j, i] += (m - 1 - k) / (m - 1)
        if k:
            a[j, i + 1] += k / (m - 1)
    a[:, n] = 127 / (m - 1)
    return a.float()


def _vela_resizes(sizes: list[tuple[int, int]]) -> bool:
    factors = {(m - 1) // (n - 1) for n, m in sizes if n > 1 and (m - 1) % (n - 1) == 0}
    exact = all(n > 1 and (m - 1) % (n - 1) == 0 for n, m in sizes)
    return exact and len(factors) == 1 and factors.pop() in _VELA_FACTORS


def _along_last(gm: GraphModule, x: Node, lead: list[int], n: int, m: int, like: Node) -> Node:
    """x [*lead, n] -> the align-corners resize of its last axis to m: cat a zero column, then one linear."""
    zeros = new_parameter(gm, "_align_corners_zeros", torch.zeros(lead + [1]), like)
    padded = call(gm, aten.cat.default, ([x, zeros], -1), like)
    weight = new_parameter(gm, "_align_corners_weight", interpolation_matrix(n, m), like)
    out = call(gm, aten.linear.default, (padded, weight), like)
    out.meta[SHARE_INPUT_QPARAMS] = True  # the concatenation shares its inputs' quantization anyway
    return out


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val, out = (x.meta.get("val") if isinstance(x, Node) else None), node.meta.get("val")
    if node.kwargs or not arg(node, "align_corners") or val is None or out is None or val.dim() != 4:
        return None
    (h, w), (oh, ow) = [int(d) for d in val.shape[2:]], [int(d) for d in out.shape[2:]]
    sizes = [(h, oh), (w, ow)]
    if (h, w) == (1, 1) or (h, w) == (oh, ow) or _vela_resizes(sizes):
        return None
    if any(n != m and not 1 < m <= _MAX_OUT for n, m in sizes):
        return None  # weights past int8, or a resize to size 1
    y, (b, c) = x, [int(d) for d in val.shape[:2]]
    if ow != w:
        y = _along_last(gm, y, [b, c, h], w, ow, node)
    if oh != h:
        y = call(gm, aten.transpose.int, (y, 2, 3), node)
        y = _along_last(gm, y, [b, c, ow], h, oh, node)
        y = call(gm, aten.transpose.int, (y, 2, 3), node)
    return y


def align_corners_resize_to_linear(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.upsample_bilinear2d.vec, aten.upsample_bilinear2d.default), _rewrite)

"""ATen pass (Ethos-U targets): a mean over H and W whose width is longer than Vela's MEAN takes (a group norm's
statistics over 8192 elements per group: GroupNorm(4, 32) of a 32 x 32 map, a mean over a [N, G, 1, 8192] image
once mean1d_to_mean2d has written it) -> the same mean of the view [N, C, a, b], a * b = H * W, b <= MEAN_AXIS_MAX.

Vela's MEAN reduces a width or depth axis of at most 4096 elements ("a reduced width or depth axis must be no
greater than 4096"). H and W of a contiguous [N, C, H, W] are one run of H * W numbers per channel plane, so the
mean over H and W of any view that splits that run differently averages the same numbers in one MEAN (one sum,
one division, one rounding): the same value with the same quantization (a mean over H and W gets its own either
way), not a mean of means. b is the largest divisor of H * W not above MEAN_AXIS_MAX; a length with none that
leaves a <= MEAN_AXIS_MAX too (a large prime) is left alone. Neutron reduces such axes itself, so the pipeline
applies this to Ethos-U targets only. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten
MEAN_AXIS_MAX = 4096  # Vela's mean_reduced_axis_max_size (ethos_u/constraints.py: MEAN_REDUCED_AXIS_MAX)


def split_length(n: int) -> tuple[int, int] | None:
    """(a, b) with a * b == n, b the largest divisor of n not above MEAN_AXIS_MAX, a not above it either; None
    when there is no such pair."""
    b = next((b for b in range(min(n, MEAN_AXIS_MAX), 0, -1) if n % b == 0))
    return (n // b, b) if n // b <= MEAN_AXIS_MAX else None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val, out = (x.meta.get("val") if isinstance(x, Node) else None), node.meta.get("val")
    dims = node.args[1] if len(node.args) > 1 else None
    if not (isinstance(val, torch.Tensor) and isinstance(out, torch.Tensor)) or val.dim() != 4 or node.kwargs:
        return None
    n, c, h, w = (int(d) for d in val.shape)
    if not dims or sorted({int(d) % 4 for d in dims}) != [2, 3] or w <= MEAN_AXIS_MAX:
        return None
    split = split_length(h * w)
    if split is None:
        return None
    mean = call(gm, aten.mean.dim, (call(gm, aten.reshape.default, (x, [n, c, *split]), node), [2, 3], True), node)
    return mean if out.dim() == 4 else call(gm, aten.reshape.default, (mean, [n, c]), node)


def mean_axis_split(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.mean.dim, _rewrite)

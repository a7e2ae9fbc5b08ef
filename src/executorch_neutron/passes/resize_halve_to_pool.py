"""ATen pass: a bilinear resize that halves H and/or W (align_corners=False) -> a 2-wide average pool with stride 2
on those axes.

With half-pixel centers, output pixel i of a halving samples the input at 2i + 0.5: the mean of pixels 2i and
2i + 1, never clamped at an edge. So the resize is exactly a (2, 2) average pool with stride 2 (or (2, 1) / (1, 2)
when one axis keeps its size), which both NPUs run, while neither runs a downscaling resize (Neutron resizes by 1,
2, 4 or 8; Vela as well). An average pool shares its input's qparams as the resize does, so it rounds once, as
PyTorch's quantized resize. The scale PyTorch uses is the given scale factor's inverse, else input / output size:
the rewrite needs it to be exactly 2 (or 1) per axis. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _factors(node: Node) -> list[int] | None:
    """The per-axis (H, W) sampling step, 1 or 2, of a half-pixel bilinear resize; None for anything else."""
    val = node.args[0].meta.get("val") if isinstance(node.args[0], Node) else None
    out = node.meta.get("val")
    if val is None or out is None or val.dim() != 4 or arg(node, "align_corners"):
        return None
    scales = arg(node, "scale_factors")
    steps = []
    for axis in (2, 3):
        i, o = int(val.shape[axis]), int(out.shape[axis])
        step = 1 / scales[axis - 2] if scales else i / o
        if step not in (1, 2) or (step == 1 and i != o):
            return None
        steps.append(int(step))
    return steps if steps != [1, 1] else None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    steps = None if node.kwargs else _factors(node)
    return None if steps is None else call(gm, aten.avg_pool2d.default, (node.args[0], steps, steps), node)


def resize_halve_to_pool(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.upsample_bilinear2d.vec, _rewrite)

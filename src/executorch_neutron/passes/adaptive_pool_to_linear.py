"""ATen pass: adaptive_avg_pool2d to an output size that does not divide the input (16 -> 12: windows of
different sizes that overlap) -> the constant linear map it is, a fully connected layer over the flattened H x W
plane: out[i, j] = sum over the window of (i, j) of x / window size, with PyTorch's windows (rows
floor(i * H / Ho) to ceil((i + 1) * H / Ho), likewise columns). One accumulation and one rounding, as the pool;
each weight row holds one value (1 / its window's size), so per-channel int8 weights hold it exactly. A map of more
than `MAX_WEIGHTS` weights is left alone (the pool stays on the CPU with its reason). Global (1 x 1) and dividing
sizes are pools the NPUs run and are left alone. Runs before quantization.
"""

from __future__ import annotations


import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, new_parameter, rewrite_calls

aten = torch.ops.aten
#: the largest map written as a fully connected layer, in weights ((Ho * Wo) x (H * W))
MAX_WEIGHTS = 1 << 16


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def pooling_map(h: int, w: int, ho: int, wo: int) -> torch.Tensor:
    """[Ho * Wo, H * W]: row (i, j) averages the input window of output pixel (i, j)."""
    m = torch.zeros(ho * wo, h * w)
    for i, (r0, r1) in enumerate(_windows(h, ho)):
        for j, (c0, c1) in enumerate(_windows(w, wo)):
            row = torch.zeros(h, w)
            row[r0:r1, c0:c1] = 1.0 / ((r1 - r0) * (c1 - c0))
            m[i * wo + j] = row.flatten()
    return m


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, out = arg(node, "self"), node.meta.get("val")
    val = x.meta.get("val") if isinstance(x, Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() != 4 or not isinstance(out, torch.Tensor):
        return None
    (n, c, h, w), (ho, wo) = val.shape, out.shape[2:]
    if (ho, wo) == (1, 1) or (h % ho == 0 and w % wo == 0) or ho * wo * h * w > MAX_WEIGHTS:
        return None
    weight = new_parameter(gm, "_neutron_adaptive_pool_map", pooling_map(h, w, ho, wo), x)
    flat = call(gm, aten.reshape.default, (x, [n, c, h * w]), node)
    pooled = call(gm, aten.linear.default, (flat, weight), node)
    return call(gm, aten.reshape.default, (pooled, [n, c, ho, wo]), node)


def adaptive_pool_to_linear(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.adaptive_avg_pool2d.default, _rewrite)

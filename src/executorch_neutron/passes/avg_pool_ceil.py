"""ATen pass: avg_pool2d with ceil_mode True whose ceil adds a window along one axis -> the pool without ceil_mode,
concatenated along that axis with the last, partial window computed on its own.

TFLite's AVERAGE_POOL_2D has no ceil mode. PyTorch's extra window at the end starts at t = out * s - p (out: the
floor-mode output count) and divides by min(t + k, L + p) - t (count_include_pad) or by the elements it holds
inside the input: the slice x[t:L], with zeros appended up to that divisor when the padding counts, averaged by a
pool whose kernel spans it along that axis (and pools the other axis as the original does), is exactly that
window. Slices, the zero pad, both pools and the concatenation share one quantization, so the result equals
PyTorch's. A ceil mode that adds windows along both axes (the corner window) is left alone. Runs before
quantization, after pool1d_to_pool2d (a 1-D pool is a 2-D one over a 1 x L image by then).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..ops.args import pool_args
from .fx_utils import arg, call, rewrite_calls
from .max_pool_padding import pool_out_size

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    if not arg(node, "ceil_mode") or val is None or val.dim() != 4 or arg(node, "divisor_override") is not None:
        return None
    pool = pool_args(node)
    k, s, p = pool.kernel, pool.stride, pool.padding
    size = [int(val.shape[2]), int(val.shape[3])]
    floor = [pool_out_size(size[i], k[i], s[i], p[i], 1, False) for i in range(2)]
    grows = [i for i in range(2) if pool_out_size(size[i], k[i], s[i], p[i], 1, True) > floor[i]]
    if len(grows) != 1:
        return None  # no window added (max_pool_padding turns ceil_mode off), or a corner window
    ax = grows[0]
    t = floor[ax] * s[ax] - p[ax]
    if t < 0 or t >= size[ax]:
        return None
    include_pad = arg(node, "count_include_pad")
    held = size[ax] - t
    divisor = min(t + k[ax], size[ax] + p[ax]) - t if include_pad else held
    other = 1 - ax
    tail_k, tail_s, tail_p = [0, 0], [0, 0], [0, 0]
    tail_k[ax], tail_s[ax], tail_p[ax] = divisor, 1, 0
    tail_k[other], tail_s[other], tail_p[other] = k[other], s[other], p[other]
    main = call(gm, aten.avg_pool2d.default, (x, k, s, p, False, include_pad), node)
    tail = call(gm, aten.slice.Tensor, (x, 2 + ax, t, size[ax]), node)
    if divisor > held:  # the right padding the window counts: zeros (constant_pad_nd pads the last dim first)
        pad = [0, divisor - held, 0, 0] if ax == 1 else [0, 0, 0, divisor - held]
        tail = call(gm, aten.constant_pad_nd.default, (tail, pad, 0.0), node)
    tail = call(gm, aten.avg_pool2d.default, (tail, tail_k, tail_s, tail_p, False, include_pad), node)
    return call(gm, aten.cat.default, ([main, tail], 2 + ax), node)


def avg_pool_ceil(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.avg_pool2d.default, _rewrite)

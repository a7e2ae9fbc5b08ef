"""ATen pass: a strided slice (`x[:, 0::2]`, step > 1) -> a step-1 slice, a reshape that puts the step in an axis
of its own, a step-1 slice of that axis, and a reshape back.

Neither NPU converts a slice with a step (NXP's release converts `slice_copy` with step 1 only; the table's rule
says so), and Swin's patch merging (`x[:, 0::2, 0::2]`, `x[:, 1::2, 0::2]`, ...) is made of them. Along a dim of
size n, `x[start:end:step]` takes the m elements first, first + step, ..., first + (m - 1) * step. When
first + m * step <= n, the step-1 slice [first, first + m * step) viewed as [before, m, step, after] (`before` and
`after`: the products of the dims around it) holds them at index 0 of its step axis; where that window would run
past the end (`x[1::2]` of an even n), the window [first - o, first - o + m * step) with o = first + m * step - n
holds them at index o (when o < step and o <= first). A step-1 slice of that axis and a reshape to the output's
shape give exactly the strided slice (the same elements in the same order; only views and step-1 slices, so no
value changes and nothing to quantize). Where no window fits, the slice is left as it is, with the table's
reason. Runs before quantization; the views and
slices share their input's quantization like any other.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from ..core.exported import schema_args
from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    a = schema_args(node)
    x, step = a["self"], a.get("step") or 1
    val = x.meta.get("val") if isinstance(x, Node) else None
    if step == 1 or not isinstance(val, torch.Tensor) or val.dim() == 0:
        return None
    out = node.meta.get("val")
    shape = list(val.shape)
    if not isinstance(out, torch.Tensor) or not all(isinstance(d, int) for d in shape):
        return None  # symbolic sizes: the arithmetic below needs numbers
    dim = a["dim"] % len(shape)
    start, end = a.get("start"), a.get("end")
    picked = range(shape[dim])[slice(start, end, step)]
    if len(picked) == 0:
        return None
    first, m = picked[0], len(picked)
    if m == 1:
        return call(gm, aten.slice.Tensor, (x, dim, first, first + 1, 1), node)
    offset = max(0, first + m * step - shape[dim])  # the picked elements' index within their groups of `step`
    if offset > min(first, step - 1):
        return None
    begin = first - offset
    before, after = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    y = x if (begin, m * step) == (0, shape[dim]) else call(gm, aten.slice.Tensor, (x, dim, begin, begin + m * step, 1),
                                                            node)
    y = call(gm, aten.reshape.default, (y, [before * m, step, after]), node)
    y = call(gm, aten.slice.Tensor, (y, 1, offset, offset + 1, 1), node)
    return call(gm, aten.reshape.default, (y, list(out.shape)), node)


def strided_slice_to_reshape(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.slice.Tensor,), _rewrite)

"""ATen pass: pad(x, mode="circular" or "replicate") -> slices of x concatenated around it, one dim at a time.

Circular padding by (lo, hi) along a dim is cat(x[size - lo:], x, x[:hi]); replicate padding is cat(lo copies of
x[:1], x, hi copies of x[-1:]). Both are separable (padding the dims one after the other, each over the tensor
already padded along the others, gives PyTorch's corners too), and slices and concatenation share x's
quantization, so the result is PyTorch's exactly and runs on the NPU. Left as they are, ExecuTorch decomposes them
after quantization into float copies and gathers on the CPU (which the Cortex-M stage's Q/DQ folding then
mistakes for int8 ops). Convolutions with padding_mode="circular" / "replicate" pad this way. Negative padding
(cropping) is left alone. Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten

MODES = ("circular", "replicate")


def _padded(gm, node, x, dim: int, size: int, lo: int, hi: int, mode: str):
    if mode == "circular":
        before = [call(gm, aten.slice.Tensor, (x, dim, size - lo, size), node)] if lo else []
        after = [call(gm, aten.slice.Tensor, (x, dim, 0, hi), node)] if hi else []
    else:
        before = [call(gm, aten.slice.Tensor, (x, dim, 0, 1), node)] * lo
        after = [call(gm, aten.slice.Tensor, (x, dim, size - 1, size), node)] * hi
    return call(gm, aten.cat.default, (before + [x] + after, dim), node)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, mode = node.args[0], arg(node, "mode")
    if mode not in MODES:
        return None
    val = x.meta.get("val") if isinstance(x, Node) else None
    pad = [int(p) for p in arg(node, "pad")]
    if val is None or any(p < 0 for p in pad) or not any(pad):
        return None
    shape = list(val.shape)
    if mode == "circular" and any(p > shape[-1 - i // 2] for i, p in enumerate(pad)):
        return None  # PyTorch refuses it
    out = x
    for i in range(len(pad) // 2):
        dim = len(shape) - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo or hi:
            out = _padded(gm, node, out, dim, shape[dim], lo, hi, mode)
            shape[dim] += lo + hi
    return out


def pad_modes_to_cat(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.pad.default, _rewrite)

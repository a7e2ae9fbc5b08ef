"""ATen pass: a 3-D convolution -> one 2-D convolution per output depth plane (Neutron and Ethos-U convolve 2-D
images only, and ExecuTorch's portable kernels have no 3-D convolution: a Conv3d left on the CPU cannot run).

Output plane o of conv3d reads the input planes i = o * stride_d - padding_d + k * dilation_d of its depth taps k
that fall inside the input (the others read zero padding and add nothing). Those planes, each [N, C, H, W] (a
one-plane slice of the input viewed as [N, C, D, H*W], reshaped: rank-4 ops the NPUs run), are concatenated along the channels, and one conv2d over (H, W) with the taps'
weights laid out the same way ([O, taps * C, kh, kw], tap-major) and the bias computes the plane: the same sum as
conv3d's, one accumulation and one rounding in int8 too. The planes are stacked back along the depth axis. A
grouped convolution interleaves its taps per group instead (group g's taps, then group g+1's), so each group still
reads its own channels. Weights are new parameters, one per distinct set of taps (border planes have fewer).
Not rewritten: string padding, non-constant weights, an output plane that no tap reaches (padding deeper than the
kernel), or more than `MAX_PLANES` output planes (the graph grows by a convolution per plane).
Runs before quantization (NeutronQuantizer.transform_for_annotation).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, constant, new_parameter, rewrite_calls

aten = torch.ops.aten
#: the most output depth planes rewritten (each becomes a 2-D convolution)
MAX_PLANES = 64


def _taps(o: int, depth: int, k: int, s: int, p: int, d: int) -> tuple[tuple[int, int], ...]:
    """(tap, input plane) pairs of output plane o that read the input, not its padding."""
    return tuple((t, o * s - p + t * d) for t in range(k) if 0 <= o * s - p + t * d < depth)


def _weight(w: torch.Tensor, taps: tuple[int, ...], groups: int) -> torch.Tensor:
    """[O, C/g, kd, kh, kw] -> [O, len(taps) * C/g, kh, kw]: the taps' slices, tap-major within each group's
    channels, matching the concatenation of the tap planes (group-major when grouped)."""
    sub = w[:, :, list(taps)]  # [O, C/g, T, kh, kw]
    return sub.permute(0, 2, 1, 3, 4).reshape(w.shape[0], len(taps) * w.shape[1], *w.shape[3:])


def _planes(gm: GraphModule, node: Node, x4: Node, shape: list[int], planes: list[int], groups: int) -> Node:
    """The input planes (of `x4`, the input viewed as [N, C, D, H*W]) concatenated along the channels, each
    [N, C, H, W]: tap-major, and group-major when grouped."""
    n, channels, _, h, w = shape
    sel = [call(gm, aten.reshape.default, (call(gm, aten.slice.Tensor, (x4, 2, i, i + 1), node), [n, channels, h, w]),
                node) for i in planes]
    if groups == 1:
        return sel[0] if len(sel) == 1 else call(gm, aten.cat.default, (sel, 1), node)
    per = channels // groups
    parts = [call(gm, aten.slice.Tensor, (s, 1, g * per, (g + 1) * per), node) for g in range(groups) for s in sel]
    return call(gm, aten.cat.default, (parts, 1), node)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, w_node, bias = arg(node, "input"), arg(node, "weight"), arg(node, "bias")
    w, val, out = constant(gm, w_node), x.meta.get("val") if isinstance(x, Node) else None, node.meta.get("val")
    if w is None or w.dim() != 5 or not isinstance(val, torch.Tensor) or val.dim() != 5 or \
            not isinstance(out, torch.Tensor):
        return None
    stride, padding, dilation = (list(arg(node, n)) for n in ("stride", "padding", "dilation"))
    groups, depth, d_out = arg(node, "groups"), val.shape[2], out.shape[2]
    taps = [_taps(o, depth, w.shape[2], stride[0], padding[0], dilation[0]) for o in range(d_out)]
    if d_out > MAX_PLANES or not all(taps):
        return None
    shape = list(val.shape)
    x4 = call(gm, aten.reshape.default, (x, shape[:3] + [shape[3] * shape[4]]), node)  # rank 4: the NPUs' slices
    weights: dict[tuple[int, ...], Node] = {}
    outputs = []
    for plane_taps in taps:
        key = tuple(t for t, _ in plane_taps)
        if key not in weights:
            weights[key] = new_parameter(gm, "_neutron_conv3d_weight", _weight(w.detach(), key, groups), w_node)
        planes = _planes(gm, node, x4, shape, [i for _, i in plane_taps], groups)
        conv = call(gm, aten.conv2d.default, (planes, weights[key], bias, stride[1:], padding[1:], dilation[1:],
                                              groups), node)
        outputs.append(call(gm, aten.unsqueeze.default, (conv, 2), node))
    return outputs[0] if len(outputs) == 1 else call(gm, aten.cat.default, (outputs, 2), node)


def conv3d_to_conv2d(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.conv3d.default, _rewrite)

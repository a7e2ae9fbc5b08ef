"""ATen pass: 3-D pools over (D, H, W) -> 2-D operators the NPUs have (Neutron and Ethos-U pool 2-D planes only,
and ExecuTorch's portable kernels have no 3-D max pool).

- max_pool3d: the 2-D max pool over (H, W) of the D planes, then the 2-D max pool over D of the result viewed as
  (D, H'*W'), and a reshape to (D', H', W'). A box is a product of one window per axis (padding, dilation and
  ceil_mode decide each axis's windows on their own), and the maximum over a box is the maximum over D of the
  maxima over (H, W): exact, in int8 too (a maximum does not round).
- avg_pool3d, and adaptive_avg_pool3d whose output divides its input (windows = strides = input / output): one 2-D
  convolution over (H, W) whose input channels are the D planes, with weight 1 / (kd * kh * kw) where plane d lies
  in output plane d''s window, 0 elsewhere. One rounding, as PyTorch's quantized pool (two pools in a row would
  round twice: 2 output steps apart). The divisor must be the window size everywhere, so an average with
  count_include_pad=False and padding, a ceil_mode window hanging over the edge, or divisor_override stays a 3-D
  pool (on the CPU), as does an adaptive pool with overlapping windows.

The leading dims (N, C) are stacked: one image of N*C*D channels for the max pools (batch 1), a batch of N*C for
the convolution. Runs before quantization (NeutronQuantizer.transform_for_annotation).
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from ..ops.args import pool_args
from .fx_utils import arg, call, new_parameter, rewrite_calls

aten = torch.ops.aten


def _max_pools(node: Node):
    """The 2-D max pool over H, W and the one over D, each as the arguments after the input."""
    pool = pool_args(node)
    k, s, p, d, ceil = pool.kernel, pool.stride, pool.padding, pool.dilation, pool.ceil_mode
    return (k[1:], s[1:], p[1:], d[1:], ceil), ([k[0], 1], [s[0], 1], [p[0], 0], [d[0], 1], ceil)


def _average(node: Node, dhw: list[int], out: list[int]) -> tuple[list[int], list[int], list[int]] | None:
    """(kernel, stride, padding) of an average whose divisor is the window size everywhere, else None."""
    if node.target == aten.adaptive_avg_pool3d.default:
        if any(i % o for i, o in zip(dhw, out)):
            return None  # overlapping windows
        k = [i // o for i, o in zip(dhw, out)]
        return k, k, [0, 0, 0]
    if arg(node, "divisor_override") is not None:
        return None
    pool = pool_args(node)
    k, s, p = pool.kernel, pool.stride, pool.padding
    if not arg(node, "count_include_pad") and any(p):
        return None  # the divisor shrinks at the edges
    if [(i + 2 * pp - kk) // ss + 1 for i, kk, ss, pp in zip(dhw, k, s, p)] != out:
        return None  # a ceil_mode window over the edge has a smaller divisor
    return k, s, p


def _average_weight(d_in: int, d_out: int, k: list[int], s: int, p: int) -> torch.Tensor:
    """[d_out, d_in, kh, kw]: 1 / (kd * kh * kw) where input plane d is in output plane o's window."""
    w = torch.zeros(d_out, d_in, k[1], k[2])
    for o in range(d_out):
        lo = o * s - p
        w[o, max(lo, 0):min(lo + k[0], d_in)] = 1.0 / math.prod(k)
    return w


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, result = node.args[0], node.meta.get("val")
    val = x.meta.get("val") if isinstance(x, Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() not in (4, 5) or not isinstance(result, torch.Tensor):
        return None
    lead, dhw, out = list(val.shape[:-3]), list(val.shape[-3:]), list(result.shape[-3:])
    n = math.prod(lead)
    if node.target == aten.max_pool3d.default:
        hw_args, d_args = _max_pools(node)
        planes = call(gm, aten.reshape.default, (x, [1, n * dhw[0], dhw[1], dhw[2]]), node)
        hw = call(gm, aten.max_pool2d.default, (planes, *hw_args), node)
        ho, wo = hw.meta["val"].shape[-2:]
        depth = call(gm, aten.reshape.default, (hw, [1, n, dhw[0], ho * wo]), node)
        d = call(gm, aten.max_pool2d.default, (depth, *d_args), node)
        return call(gm, aten.reshape.default, (d, lead + out), node)
    window = _average(node, dhw, out)
    if window is None:
        return None
    k, s, p = window
    weight = new_parameter(gm, "_neutron_avg3d_weight", _average_weight(dhw[0], out[0], k, s[0], p[0]), x)
    planes = call(gm, aten.reshape.default, (x, [n, dhw[0], dhw[1], dhw[2]]), node)
    conv = call(gm, aten.conv2d.default, (planes, weight, None, s[1:], p[1:]), node)
    return call(gm, aten.reshape.default, (conv, lead + out), node)


def pool3d_to_pool2d(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, (aten.max_pool3d.default, aten.avg_pool3d.default, aten.adaptive_avg_pool3d.default),
                         _rewrite)

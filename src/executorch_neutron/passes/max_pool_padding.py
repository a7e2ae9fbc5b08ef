"""ATen pass: max_pool2d padding that TFLite cannot express -> explicit pad + max_pool2d without padding.

PyTorch pads a max pool with -inf; TFLite's MAX_POOL_2D only knows SAME and VALID. Two cases are rewritten, both
exactly (every pooling window holds at least one real element, so the pad value only has to lose):
- padding that is not SAME (ResNet stem: kernel 3, stride 2, padding 1 on an even size);
- ceil_mode True, which adds windows that hang over the bottom/right edge: extra padding there, ceil_mode off.
A -inf or large negative pad value cannot be used: a pad shares its input's quantization, so the shared observer
would see it and wreck the scale. Instead:
- when the input cannot be negative (relu / relu6 / a clamp with a lower bound >= 0 / sigmoid, possibly through
  cat, max pools, slices and reshapes) the pad value is 0: the quantized zero point, inside the observed range;
- otherwise the edges are replicated (slices of the first / last row and column, concatenated): a window that
  holds a padded position also holds the edge element it copies (PyTorch keeps padding <= kernel / 2 and starts
  every window inside the input or its left padding), so the maximum is unchanged. Slices and cat share the
  input's quantization, so the observers see only real values.
ceil_mode that adds no window is just turned off (for average pools too). Runs before quantization.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from ..ops.args import pool_args
from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten
_POOLS = (aten.max_pool2d.default, aten.avg_pool2d.default)
_NONNEGATIVE = {aten.relu.default, aten.relu_.default, aten.relu6.default, aten.sigmoid.default,
                aten.sigmoid_.default, aten.hardsigmoid.default}
_PASS_SIGN = {aten.max_pool2d.default, aten.view.default, aten.reshape.default, aten.slice.Tensor,
              aten.flatten.using_ints, aten.permute.default, aten.transpose.int}  # non-negative in, non-negative out
_CLAMPS = {aten.hardtanh.default: "min_val", aten.hardtanh_.default: "min_val", aten.clamp.default: "min",
           aten.clamp_.default: "min"}


def _nonnegative(node, depth: int = 8) -> bool:
    if getattr(node, "op", None) != "call_function" or depth == 0:
        return False
    if node.target in _NONNEGATIVE:
        return True
    if node.target in (aten.cat.default, aten.concat.default):
        return all(_nonnegative(t, depth - 1) for t in node.args[0])
    if node.target in _PASS_SIGN:
        return _nonnegative(node.args[0], depth - 1)
    if node.target in _CLAMPS:
        lo = arg(node, _CLAMPS[node.target])
        return lo is not None and float(lo) >= 0
    return False


def pool_out_size(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:  # PyTorch: the last window must start inside the input or left pad
        out -= 1
    return out


def _is_same(size: int, k: int, s: int, p: int) -> bool:
    same_out = math.ceil(size / s)
    total = max((same_out - 1) * s + k - size, 0)
    return (size + 2 * p - k) // s + 1 == same_out and total // 2 == p


def _set_arg(node, name: str, value) -> None:
    i = [a.name for a in node.target._schema.arguments].index(name)
    if i < len(node.args):
        node.args = (*node.args[:i], value, *node.args[i + 1:])
    else:
        node.kwargs = {**node.kwargs, name: value}


def _replicate(gm, x, dim: int, before: int, after: int, like):
    """x with its first slice along `dim` repeated `before` times in front and its last `after` times behind."""
    if not before and not after:
        return x
    size = int(x.meta["val"].shape[dim])
    first = call(gm, aten.slice.Tensor, (x, dim, 0, 1), like) if before else None
    last = call(gm, aten.slice.Tensor, (x, dim, size - 1, size), like) if after else None
    return call(gm, aten.cat.default, ([first] * before + [x] + [last] * after, dim), like)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    """The padded pool, or the pool itself with ceil_mode turned off where it adds no window, or None."""
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    if val is None or val.dim() != 4:
        return None
    pool = pool_args(node)
    k, s, p, d, ceil = pool.kernel, pool.stride, pool.padding, pool.dilation, pool.ceil_mode
    size = [int(val.shape[2]), int(val.shape[3])]
    floor_out = [pool_out_size(size[i], k[i], s[i], p[i], d[i], False) for i in range(2)]
    ceil_out = [pool_out_size(size[i], k[i], s[i], p[i], d[i], True) for i in range(2)]
    in_place = None  # the call itself, once its ceil_mode is turned off
    if ceil and floor_out == ceil_out:  # ceil_mode adds no window
        _set_arg(node, "ceil_mode", False)
        ceil, in_place = False, node
    if node.target != aten.max_pool2d.default or d != [1, 1]:
        return in_place
    out = ceil_out if ceil else floor_out
    if not ceil and (not any(p) or all(_is_same(size[i], k[i], s[i], p[i]) for i in range(2))):
        return in_place
    # after padding (before: p, after: whatever the last window needs beyond the input)
    after = [max((out[i] - 1) * s[i] + k[i] - size[i] - p[i], 0) for i in range(2)]
    if _nonnegative(x):
        padded = call(gm, aten.constant_pad_nd.default, (x, [p[1], after[1], p[0], after[0]], 0.0), node)
    else:
        padded = x
        for i in range(2):
            padded = _replicate(gm, padded, 2 + i, p[i], after[i], node)
    return call(gm, aten.max_pool2d.default, (padded, k, s, [0, 0], [1, 1], False), node)


def max_pool_padding(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, _POOLS, _rewrite)

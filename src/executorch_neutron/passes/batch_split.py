"""ATen pass (Ethos-U targets): a resize or a spatial mean over a batch of N > 1 images of C channels runs on one
image of N * C channels, viewed back to N images after.

Vela compiles MEAN and RESIZE for batch 1 only ("Batch must be 1"). Both ops compute each channel plane of each
image on its own, so [N, C, H, W] viewed as [1, N * C, H, W] gives the same values, and a view shares its input's
qparams, so nothing is rounded twice. (Slicing the batch and concatenating the results does not compile: Vela
writes a resize straight into the concatenation's buffer at a batch offset and then fails on it.) A mean over
the batch, or a tensor that is not rank 4, stays as it is. A mean over other dims than H and W (not the batch) of a
batch of N > 1 reduces a run of adjacent dims of each of the N images: [N, C, H, W] viewed as [1, A, R, B] (A the
elements before the run, N included; R the run's; B those after it) and reduced over its third dim gives the same
values (nn.MultiheadAttention's mean of the attention weights over the heads, [N, heads, L, S] -> [N, L, S]). That
mean is still not over H and W, so it keeps its input's quantization as the original does. Neutron runs these ops at
any batch, so the pipeline applies this to Ethos-U targets only.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten

#: the ops Vela runs at batch 1 only, as they appear before quantization (ethos_u/constraints.py: _BATCH_ONE)
PER_PLANE = (aten.upsample_bilinear2d.vec, aten.upsample_nearest2d.vec, aten.mean.dim,
             aten.adaptive_avg_pool2d.default, aten._adaptive_avg_pool2d.default)


def _shape(node: object) -> tuple:
    val = node.meta.get("val") if isinstance(node, Node) else None
    return tuple(getattr(val, "shape", ()))


def _run_of_dims(node: Node) -> list[int] | None:
    """The dims (ascending) of a mean over a run of adjacent dims of a batch of N > 1 rank-4 tensors that leaves
    the batch and is not the spatial mean, else None."""
    shape = _shape(node.args[0])
    dims = node.args[1] if node.target == aten.mean.dim and len(node.args) > 1 else None
    if len(shape) != 4 or not all(isinstance(s, int) for s in shape) or shape[0] <= 1 or node.kwargs or not dims:
        return None
    dims = sorted({d % 4 for d in dims})
    if 0 in dims or dims == [2, 3] or dims != list(range(dims[0], dims[-1] + 1)):
        return None
    return dims


def _per_plane(node: Node) -> bool:
    """Whether the node computes each channel plane of each of N > 1 images of a rank-4 input on its own."""
    shape = _shape(node.args[0])
    if len(shape) != 4 or not all(isinstance(s, int) for s in shape) or shape[0] <= 1 or node.kwargs:
        return False
    if node.target == aten.mean.dim:
        dims = node.args[1] if len(node.args) > 1 else None
        return bool(dims) and {d % 4 for d in dims} <= {2, 3}
    return True


def _one_image_mean(gm: GraphModule, node: Node, dims: list[int]) -> Node:
    """The mean over `dims` as a mean over the third dim of the one-image view [1, A, R, B]."""
    shape = _shape(node.args[0])
    view = [1, math.prod(shape[:dims[0]]), math.prod(shape[dims[0]:dims[-1] + 1]), math.prod(shape[dims[-1] + 1:])]
    one = call(gm, aten.mean.dim, (call(gm, aten.view.default, (node.args[0], view), node), [2], True), node)
    return call(gm, aten.view.default, (one, list(_shape(node))), node)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    dims = _run_of_dims(node)
    if dims is not None:
        return _one_image_mean(gm, node, dims)
    if not _per_plane(node):
        return None
    n, c, h, w = _shape(node.args[0])
    planes = call(gm, aten.view.default, (node.args[0], [1, n * c, h, w]), node)
    one = call(gm, node.target, (planes, *node.args[1:]), node)
    return call(gm, aten.view.default, (one, [n, c, *_shape(node)[2:]]), node)


def batch_split(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, PER_PLANE, _rewrite)

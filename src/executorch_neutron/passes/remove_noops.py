"""ATen pass: remove nodes that compute nothing: clone, alias, detach, dropout in eval, view/reshape to the same shape,
a conversion to the dtype the tensor already has (`x.float()` of a float tensor), a nearest or bilinear resize to
the input's own size (no scale factor, or 1: every output reads its own input pixel), and dtype assertions.

Each becomes its input. A no-op whose input is a model input and whose result is a model output is kept (an
output must not alias an input). Runs before quantization, so the removed nodes never get their own q/dq pair.
A copy (contiguous, clone) may be what makes a later `view` legal (channel shuffle: view -> transpose ->
contiguous -> view): the views that read a removed copy become `reshape`, which is defined on any strides.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_utils import arg, finish

aten = torch.ops.aten
_IDENTITY = {aten.clone.default, aten.alias.default, aten.detach.default, aten.detach_.default,
             aten.contiguous.default, aten.lift_fresh_copy.default}
_RESHAPES = {aten.view.default, aten.reshape.default, aten._unsafe_view.default}
#: dropout in eval, also in place (torchvision's classifiers: Dropout(p, inplace=True)); left in the graph, an
#: in-place dropout got its own output quantization: a requantization on the CPU between the pool and the linear
_DROPOUTS = {aten.dropout.default, aten.dropout_.default, aten.feature_dropout.default, aten.feature_dropout_.default,
             aten.alpha_dropout.default, aten.alpha_dropout_.default, aten.feature_alpha_dropout.default,
             aten.feature_alpha_dropout_.default}


_TO_DTYPE = {aten.to.dtype, aten._to_copy.default}
#: resize op -> its scale arguments: with the input's size as output size, an identity when no scale is given or
#: every scale is 1 (another scale, 1.05 on 8 pixels, keeps the size but moves the sampling points)
_RESIZES = {aten.upsample_nearest2d.vec: ("scale_factors",), aten.upsample_bilinear2d.vec: ("scale_factors",),
            aten.upsample_nearest2d.default: ("scales_h", "scales_w"),
            aten.upsample_bilinear2d.default: ("scales_h", "scales_w")}
_ASSERTS = {aten._assert_tensor_metadata.default}


def _same_dtype(node) -> bool:
    src, dst = node.args[0].meta.get("val"), node.meta.get("val")
    extra = {k: v for k, v in node.kwargs.items() if k not in ("dtype", "copy") and v is not None}
    return (src is not None and dst is not None and src.dtype == dst.dtype and src.device == dst.device
            and not extra)


def _is_noop(node) -> bool:
    if node.target in _IDENTITY:
        fmt = node.kwargs.get("memory_format")
        return fmt in (None, torch.preserve_format, torch.contiguous_format)
    if node.target in _DROPOUTS:
        return not arg(node, "train") or arg(node, "p") == 0
    if node.target in _TO_DTYPE:
        return _same_dtype(node)
    if node.target in _RESHAPES or node.target in _RESIZES:
        src, dst = node.args[0].meta.get("val"), node.meta.get("val")
        same = src is not None and dst is not None and tuple(src.shape) == tuple(dst.shape)
        return same and all(_unit_scales(arg(node, name)) for name in _RESIZES.get(node.target, ()))
    return False


def _unit_scales(scales) -> bool:
    if scales is None:
        return True
    return all(s is None or float(s) == 1.0 for s in (scales if isinstance(scales, (list, tuple)) else [scales]))


def remove_noops(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in _ASSERTS and not node.users:
            gm.graph.erase_node(node)
            continue
        if node.op != "call_function" or not _is_noop(node):
            continue
        src = node.args[0]
        if getattr(src, "op", None) == "placeholder" and any(u.op == "output" for u in node.users):
            continue
        if node.target in _IDENTITY:
            for user in node.users:
                if user.target in (aten.view.default, aten._unsafe_view.default):
                    user.target = aten.reshape.default
        node.replace_all_uses_with(src)
        gm.graph.erase_node(node)
    return finish(gm)

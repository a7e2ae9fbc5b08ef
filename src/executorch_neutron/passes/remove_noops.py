"""ATen pass: remove nodes that compute nothing: clone, alias, detach, dropout in eval, view/reshape to the same shape,
a conversion to the dtype the tensor already has (`x.float()` of a float tensor), and dtype assertions.

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
    if node.target in _RESHAPES:
        src, dst = node.args[0].meta.get("val"), node.meta.get("val")
        return src is not None and dst is not None and tuple(src.shape) == tuple(dst.shape)
    return False


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

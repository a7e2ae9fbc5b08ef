"""ATen pass: a softmax over scores masked by a constant boolean mask -> an exact masked softmax from table ops.

Attention written by hand (and the guarded softmax SDPA decomposes into) masks scores with -inf before the
softmax: `softmax(where(mask, s, -inf))`, `softmax(s.masked_fill(~mask, -inf))`, also with a large negative
finite fill (transformers' `finfo.min`), or `_safe_softmax` (rows that are all masked give 0). No int8 tensor
holds -inf, and no NPU kernel selects per element. With the mask a constant (`fold_constants` has folded masks
computed from shapes by now) the rewrite is exact:

- a mask that is all true: the softmax of the scores themselves.
- otherwise `masked_softmax`: the masked scores are pushed down by a large constant in an add whose output keeps
  the scores' own quantization (`SHARE_INPUT_QPARAMS`: they saturate at the int8 minimum instead of widening the
  range), the softmax of that is multiplied by the 0/1 mask (masked probabilities become exactly 0, in LiteRT and
  in PyTorch's quantized model alike) and divided by its row sum: softmax(s + a) * m / sum(softmax(s + a) * m) is
  the softmax over the kept entries for any finite a. Rows with no kept entry give 0 (1 is added to their sum),
  as `_safe_softmax` does; a plain softmax or a finite fill gives such rows NaN or uniform weights instead, so
  there the rewrite is not made. The division becomes two multiplications by an rsqrt in
  `div_by_tensor_to_rsqrt`; the rewrite is made only where the table runs sum and rsqrt.

`sdpa_to_matmul` writes its masked attention with `masked_softmax` too. Runs before quantization.
"""

from __future__ import annotations

import numbers

import torch
from torch.fx import GraphModule, Node

from .fx_utils import SHARE_INPUT_QPARAMS, call, constant, new_parameter, rewrite_calls

aten = torch.ops.aten

#: what a masked score is lowered by before the softmax (its add saturates at the scores' int8 minimum)
MASK_FILL = -1.0e4
#: a fill at or below this stands for -inf (exp of it underflows to 0 in float32 next to any kept score)
FILL_AT_MOST = -1.0e4
_SOFTMAX = (aten.softmax.int, aten._softmax.default, aten._safe_softmax.default)


def masked_softmax(gm: GraphModule, like: Node, scores: Node, keep: torch.Tensor) -> Node:
    """Softmax over the last dim of `scores` where the constant boolean `keep` (broadcast to its shape) is true, 0
    elsewhere and in rows with nothing kept; nodes inserted at the insertion point, meta from `like`."""
    keep_f = keep.to(torch.float32)
    fill = new_parameter(gm, "_mask_fill", (1.0 - keep_f) * MASK_FILL, scores)
    pushed = call(gm, aten.add.Tensor, (scores, fill), like)
    pushed.meta[SHARE_INPUT_QPARAMS] = True
    probs = call(gm, aten.softmax.int, (pushed, -1), like)
    kept = call(gm, aten.mul.Tensor, (probs, new_parameter(gm, "_mask_keep", keep_f, scores)), like)
    total = call(gm, aten.sum.dim_IntList, (kept, [-1], True), like)
    empty = ~keep.any(dim=-1, keepdim=True)
    if bool(empty.any()):
        total = call(gm, aten.add.Tensor, (total, new_parameter(gm, "_mask_empty", empty.to(torch.float32), scores)),
                     like)
    return call(gm, aten.div.Tensor, (kept, total), like)


def _masked(gm: GraphModule, node: Node):
    """(scores, keep) when `node` masks scores with a constant boolean mask and -inf (or a fill <= FILL_AT_MOST),
    else None."""
    if not isinstance(node, Node) or node.op != "call_function":
        return None
    if node.target == aten.where.ScalarOther:
        cond, scores, fill, keep_is = node.args[0], node.args[1], node.args[2], True
    elif node.target == aten.masked_fill.Scalar:
        scores, cond, fill, keep_is = node.args[0], node.args[1], node.args[2], False
    else:
        return None
    mask = constant(gm, cond)
    if mask is None or mask.dtype != torch.bool or not isinstance(fill, numbers.Number) or fill > FILL_AT_MOST:
        return None
    return scores, (mask if keep_is else ~mask)


def _last_dim(node: Node) -> bool:
    dim = node.args[1]
    rank = node.args[0].meta["val"].dim() if "val" in node.args[0].meta else None
    return dim == -1 or (rank is not None and dim == rank - 1)


def _rewrite(gm: GraphModule, node: Node, with_renorm: bool) -> Node | None:
    found = _masked(gm, node.args[0])
    if found is None or not _last_dim(node) or (node.target == aten._softmax.default and node.args[2]):
        return None
    scores, keep = found
    if bool(keep.all()):
        return call(gm, aten.softmax.int, (scores, -1), node)
    safe = node.target == aten._safe_softmax.default
    if not with_renorm or (not safe and not bool(keep.any(dim=-1).all())):
        return None
    return masked_softmax(gm, node, scores, keep)


def masked_softmax_decompose(gm: GraphModule, with_sum: bool = True, with_rsqrt: bool = True) -> GraphModule:
    return rewrite_calls(gm, _SOFTMAX, lambda g, n: _rewrite(g, n, with_sum and with_rsqrt))

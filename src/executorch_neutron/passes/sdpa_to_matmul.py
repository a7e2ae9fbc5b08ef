"""ATen pass: F.scaled_dot_product_attention -> matmul, scale, [mask], softmax, matmul, from ops the NPU runs.

softmax(q @ k^T * scale + mask) @ v, written out before annotation: each piece is quantized (PyTorch's quantized
model computes the same graph) and the NPU runs it (the matmuls become bmm in `matmul_to_bmm`). Left alone,
ExecuTorch decomposes SDPA after quantization into a guarded softmax (a boolean mask becomes -inf, which no int8
tensor holds; rows that are all -inf give 0: logical_not, eq, any, where, full_like, scalar_tensor), expand/view
copies, bmm and softmax, all in float on the CPU. timm's ViT, MobileViT and EfficientViT, nn.MultiheadAttention
(need_weights=False) and Hugging Face transformers' `sdpa` attention (which passes a boolean mask, all true for an
encoder without padding) call it. The mask, by kind:

- none, or a constant boolean mask that is all true (`fold_constants` has made transformers' mask, computed from
  `arange` and shapes, a constant by now): plain softmax, exactly SDPA.
- an additive float mask (a constant or computed at run time): added to the scaled scores, an int8 add quantized
  like any other (a constant's -inf entries are handled as a boolean mask's False ones, its finite part added).
- `is_causal`, or a constant boolean mask with False entries: the exact masked softmax of
  `masked_softmax.masked_softmax` (masked probabilities exactly 0, the kept ones renormalized; rows with no kept
  entry give 0, as SDPA does), made only where the table runs sum and rsqrt (`with_sum`, `with_rsqrt`), else SDPA
  is left alone with that reason.
- a boolean mask computed at run time: left alone, with the reason on the node (`LEFT_FLOAT`), which the
  partitioner gives for its pieces. So are dropout and grouped-query heads (`enable_gqa`).

`scale` defaults to 1 / sqrt(head size). Runs before quantization.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from ..core.meta_keys import LEFT_FLOAT
from .fx_utils import arg, call, constant, new_parameter, rewrite_calls
from .masked_softmax_decompose import masked_softmax

aten = torch.ops.aten

RUNTIME_BOOL_MASK = ("a boolean attention mask computed at run time: an int8 tensor cannot hold the -inf it "
                     "stands for and no NPU kernel selects per element; pass a constant mask, or an additive float "
                     "mask (0 where attended, a large negative number elsewhere)")
NO_RENORM = ("a causal or constant boolean mask with masked entries is written as softmax, a 0/1 product and a "
             "division by the row sum (sum and rsqrt), which this target's operator table does not run")


def _leave(node: Node, why: str) -> None:
    node.meta["custom"] = {**(node.meta.get("custom") or {}), LEFT_FLOAT: f"scaled_dot_product_attention with {why}"}


def _mask_parts(gm: GraphModule, node: Node, shape: tuple[int, int]):
    """(additive, keep, problem): an additive float operand (a Node, a constant tensor or None), the constant
    boolean mask of kept entries (None: all kept) and, when the mask has no form written here, why."""
    mask, keep, additive = arg(node, "attn_mask"), None, None
    if arg(node, "is_causal"):
        keep = torch.ones(shape, dtype=torch.bool).tril()
    if mask is None:
        return None, keep, None
    value = constant(gm, mask)
    fake = mask.meta.get("val") if isinstance(mask, Node) else None
    dtype = value.dtype if value is not None else getattr(fake, "dtype", None)
    if dtype == torch.bool:
        if value is None:
            return None, None, RUNTIME_BOOL_MASK
        keep = value if keep is None else keep & value
    elif dtype is not None and dtype.is_floating_point:
        if value is None:
            return mask, keep, None
        value = value.detach()
        finite = torch.isfinite(value)
        if not bool((finite | (value == -math.inf)).all()):
            return None, None, "an additive mask holding +inf or NaN"
        if not bool(finite.all()):
            keep = finite if keep is None else keep & finite
        value = torch.where(finite, value, torch.zeros_like(value))
        additive = value if bool(value.any()) else None
    else:
        return None, None, f"a mask of dtype {dtype}"
    return additive, keep, None


def _rewrite(gm: GraphModule, node: Node, with_renorm: bool) -> Node | None:
    q, k, v = node.args[:3]
    if arg(node, "dropout_p"):
        return _leave(node, "dropout")
    if arg(node, "enable_gqa"):
        return _leave(node, "grouped-query heads (enable_gqa)")
    qv, kv = q.meta.get("val"), k.meta.get("val")
    if qv is None or kv is None:
        return None
    additive, keep, problem = _mask_parts(gm, node, (qv.shape[-2], kv.shape[-2]))
    if problem:
        return _leave(node, problem)
    if keep is not None and bool(keep.all()):
        keep = None
    if keep is not None and not with_renorm:
        return _leave(node, NO_RENORM)
    scale = arg(node, "scale")
    scale = 1.0 / math.sqrt(qv.shape[-1]) if scale is None else float(scale)
    scores = call(gm, aten.matmul.default, (q, call(gm, aten.transpose.int, (k, -2, -1), node)), node)
    scores = call(gm, aten.mul.Tensor, (scores, scale), node)
    if isinstance(additive, torch.Tensor):
        additive = new_parameter(gm, "_sdpa_mask_add", additive.to(torch.float32), scores)
    if additive is not None:
        scores = call(gm, aten.add.Tensor, (scores, additive), node)
    if keep is None:
        probs = call(gm, aten.softmax.int, (scores, -1), node)
    else:
        probs = masked_softmax(gm, node, scores, keep)
    return call(gm, aten.matmul.default, (probs, v), node)


def sdpa_to_matmul(gm: GraphModule, with_sum: bool = True, with_rsqrt: bool = True) -> GraphModule:
    return rewrite_calls(gm, aten.scaled_dot_product_attention.default,
                         lambda g, n: _rewrite(g, n, with_sum and with_rsqrt))

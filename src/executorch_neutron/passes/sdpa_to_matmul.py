"""ATen pass: F.scaled_dot_product_attention (no mask, no dropout, not causal) -> matmul, scale, softmax, matmul.

softmax(q @ k^T * scale) @ v, written out before annotation: each piece is quantized (PyTorch's quantized model
computes the same graph) and Neutron runs it (the matmuls become bmm in `matmul_to_bmm`). Left alone, ExecuTorch
decomposes SDPA after quantization into mask logic (logical_not, eq, where), expand/view copies, bmm and softmax,
all in float on the CPU. timm's ViT, MobileViT and EfficientViT and nn.MultiheadAttention (need_weights=False)
call it. Attention with a mask, dropout, is_causal or grouped-query heads is left alone. Runs before quantization.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    q, k, v = node.args[:3]
    if (arg(node, "attn_mask") is not None or arg(node, "dropout_p") or arg(node, "is_causal")
            or arg(node, "enable_gqa")):
        return None
    qv = q.meta.get("val")
    if qv is None:
        return None
    scale = arg(node, "scale")
    scale = 1.0 / math.sqrt(qv.shape[-1]) if scale is None else float(scale)
    scores = call(gm, aten.matmul.default, (q, call(gm, aten.transpose.int, (k, -2, -1), node)), node)
    probs = call(gm, aten.softmax.int, (call(gm, aten.mul.Tensor, (scores, scale), node), -1), node)
    return call(gm, aten.matmul.default, (probs, v), node)


def sdpa_to_matmul(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.scaled_dot_product_attention.default, _rewrite)

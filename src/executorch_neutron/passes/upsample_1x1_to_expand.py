"""ATen pass: an upsampling (bilinear, bicubic or nearest, any align_corners) of a 1 x 1 image -> expand to the
output size: every output pixel reads the one input pixel, so the result is its broadcast (DeepLabV3's ASPP
image-pooling branch: a global mean upsampled back to the feature map). Neutron's resize kernels take scales 1, 2,
4 or 8 only; expand_to_cat then writes the broadcast as concatenations of copies (exact in int8). Ethos-U targets
resize a 1 x 1 image natively and keep the resize. Runs before quantization, before expand_to_cat.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten
_UPSAMPLES = (aten.upsample_bilinear2d.vec, aten.upsample_nearest2d.vec, aten.upsample_bicubic2d.vec,
              aten.upsample_bilinear2d.default, aten.upsample_nearest2d.default)


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x, out = node.args[0], node.meta.get("val")
    val = x.meta.get("val") if isinstance(x, Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() != 4 or tuple(val.shape[2:]) != (1, 1) or \
            not isinstance(out, torch.Tensor) or not all(isinstance(d, int) for d in out.shape):
        return None
    return call(gm, aten.expand.default, (x, list(out.shape)), node)


def upsample_1x1_to_expand(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, _UPSAMPLES, _rewrite)

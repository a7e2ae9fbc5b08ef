"""ATen pass: stack(tensors, dim) -> cat of each tensor unsqueezed at `dim`.

`torch.stack` is one ATen op before quantization, which NeutronQuantizer does not annotate, and ExecuTorch
decomposes it into unsqueezes and a cat only after quantization, so every piece stayed float on the CPU. Written as
the unsqueezes and the cat first, each is annotated like any other (a view shares its input's quantization, the
cat shares one set over its inputs and output) and the whole stack runs on the NPU (NXP's release delegates it).
Runs before quantization.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import arg, call, rewrite_calls

aten = torch.ops.aten


def _float_tensors(node: Node) -> list[Node] | None:
    tensors = list(arg(node, "tensors"))
    vals = [t.meta.get("val") if isinstance(t, Node) else None for t in tensors]
    ok = tensors and all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in vals)
    return tensors if ok else None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    tensors = _float_tensors(node)
    if tensors is None:
        return None
    dim = int(arg(node, "dim")) % (tensors[0].meta["val"].dim() + 1)
    return call(gm, aten.cat.default, ([call(gm, aten.unsqueeze.default, (t, dim), node) for t in tensors], dim), node)


def stack_to_cat(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.stack.default, _rewrite)

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

from .fx_utils import arg, call, finish

aten = torch.ops.aten


def _float_tensors(node: Node) -> list[Node] | None:
    tensors = list(arg(node, "tensors"))
    vals = [t.meta.get("val") if isinstance(t, Node) else None for t in tensors]
    ok = tensors and all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in vals)
    return tensors if ok else None


def stack_to_cat(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.stack.default:
            continue
        tensors = _float_tensors(node)
        if tensors is None:
            continue
        rank = tensors[0].meta["val"].dim() + 1
        dim = int(arg(node, "dim")) % rank
        with gm.graph.inserting_before(node):
            pieces = [call(gm, aten.unsqueeze.default, (t, dim), node) for t in tensors]
            out = call(gm, aten.cat.default, (pieces, dim), node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
    return finish(gm)

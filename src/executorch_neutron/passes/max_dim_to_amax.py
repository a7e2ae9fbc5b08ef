"""ATen pass: `torch.max(x, dim)` / `torch.min(x, dim)` whose indices nothing reads -> `amax` / `amin` over dim.

`x.max(dim=1).values` (or `torch.max(x, 1)[0]`, CBAM's channel pooling) returns values and indices; the indices are
an int64 result neither NPU computes, so the op stayed on the CPU even when only its values were used. The values
are exactly the reduction amax / amin, which both NPUs run. Runs before quantization.
"""

from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule

from .fx_utils import arg, call, finish

aten = torch.ops.aten
REDUCTION = {aten.max.dim: aten.amax.default, aten.min.dim: aten.amin.default}


def max_dim_to_amax(gm: GraphModule) -> GraphModule:
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in REDUCTION:
            continue
        readers = list(node.users)
        if not all(r.target is operator.getitem for r in readers):
            continue
        if any(r.args[1] == 1 and r.users for r in readers):
            continue  # the indices are read
        with gm.graph.inserting_before(node):
            reduced = call(gm, REDUCTION[node.target], (node.args[0], [arg(node, "dim")], arg(node, "keepdim")),
                           node)
        for r in readers:
            if r.args[1] == 0:
                r.replace_all_uses_with(reduced)
        changed = True
    return finish(gm) if changed else gm

"""ATen pass: log1p(x) -> log(x + 1).

Neither Neutron's operator tables nor NXP's SDK have LOG1P; LOG is in NXP's current SDK (and Vela's list). Written
out before annotation, the sum x + 1 gets its own int8 quantization (one rounding more than a LOG1P kernel would
make; PyTorch's quantized model computes exactly this graph) and LOG reads it. Runs before quantization; only
where the target's table runs log.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, rewrite_calls

aten = torch.ops.aten


def _rewrite(gm: GraphModule, node: Node) -> Node:
    return call(gm, aten.log.default, (call(gm, aten.add.Tensor, (node.args[0], 1.0), node),), node)


def log1p_to_log(gm: GraphModule) -> GraphModule:
    return rewrite_calls(gm, aten.log1p.default, _rewrite)

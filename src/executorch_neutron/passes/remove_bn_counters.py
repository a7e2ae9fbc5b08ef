"""ATen pass: remove `bn.num_batches_tracked += 1` updates that no computation reads.

A model exported in train mode (QAT) increments every batch norm's counter in place. The counter only matters for
batch norms with momentum=None (it is then read to compute the averaging factor); otherwise nothing reads it.
torchao's QAT convert drops the increments of the BatchNorm2d it folds but keeps those of other batch norms (e.g.
a BatchNorm1d after a conv1d, which Neutron runs as a conv2d), and a kept increment is a CPU op in every inference
of the .pte. Runs before quantization (NeutronQuantizer.transform_for_annotation).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_utils import finish

aten = torch.ops.aten


def _unread_counter_update(node: Node) -> bool:
    if node.op != "call_function" or node.target != aten.add_.Tensor or node.users or node.args[1] != 1:
        return False
    counter = node.args[0]
    return (isinstance(counter, Node) and counter.op == "get_attr"
            and counter.target.split(".")[-1] == "num_batches_tracked" and len(counter.users) == 1)


def remove_bn_counters(gm: GraphModule) -> GraphModule:
    for node in list(gm.graph.nodes):
        if _unread_counter_update(node):
            gm.graph.erase_node(node)
    return finish(gm)

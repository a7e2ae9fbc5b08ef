"""Helpers of the quantizer tests: run the PT2E flow, read q/dq parameters out of a converted graph.

The reference these tests check against is what LiteRT's int8 kernels require (written out in the tests) and the
float model (a sanity bound on accuracy); nothing here calls the quantizer's own spec code.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e import move_exported_model_to_eval
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e

from executorch_neutron.quantizer import NeutronQuantizer

qd = torch.ops.quantized_decomposed
QUANTIZE = {qd.quantize_per_tensor.default, qd.quantize_per_channel.default}
DEQUANTIZE = {qd.dequantize_per_tensor.default, qd.dequantize_per_channel.default}


def quantize_ptq(
    model: torch.nn.Module,
    inputs: tuple,
    calib: Sequence[tuple] | None = None,
    quantizer: NeutronQuantizer | None = None,
) -> GraphModule:
    """export -> prepare_pt2e -> calibrate (the example inputs plus `calib`) -> convert_pt2e.

    The result carries `exported_targets`: the call targets of the exported graph before quantization."""
    model = model.eval()
    gm = torch.export.export(model, inputs).module()
    exported_targets = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    prepared = prepare_pt2e(gm, quantizer or NeutronQuantizer(target="imxrt700"))
    for batch in [inputs, *(calib or ())]:
        prepared(*batch)
    converted = convert_pt2e(prepared)
    converted.exported_targets = exported_targets
    return converted


def quantize_qat(
    model: torch.nn.Module, inputs: tuple, train_step: Callable[[GraphModule], None], steps: int = 3
) -> tuple[GraphModule, GraphModule]:
    """export (train mode) -> prepare_qat_pt2e -> `steps` calls of train_step -> eval -> convert_pt2e."""
    gm = torch.export.export(model.train(), inputs).module()
    prepared = prepare_qat_pt2e(gm, NeutronQuantizer(target="imxrt700", is_qat=True))
    for _ in range(steps):
        train_step(prepared)
    move_exported_model_to_eval(prepared)
    return prepared, convert_pt2e(prepared)


@dataclass
class QParams:
    scale: torch.Tensor  # float64, 1-D (one element per tensor, or one per channel)
    zero_point: torch.Tensor  # int64, 1-D
    axis: int | None  # None: per tensor
    qmin: int
    qmax: int
    dtype: torch.dtype

    def same_as(self, other: "QParams") -> bool:
        return (
            torch.equal(self.scale, other.scale)
            and torch.equal(self.zero_point, other.zero_point)
            and (self.axis, self.qmin, self.qmax, self.dtype) == (other.axis, other.qmin, other.qmax, other.dtype)
        )


def _value(gm: GraphModule, a) -> torch.Tensor:
    if isinstance(a, Node):
        assert a.op == "get_attr", f"expected a constant, got {a.format_node()}"
        v = gm
        for part in a.target.split("."):
            v = getattr(v, part)
        return torch.as_tensor(v).detach()
    return torch.as_tensor(a)


def qparams(gm: GraphModule, q_or_dq: Node) -> QParams:
    """Parameters of a quantize/dequantize node (per tensor or per channel)."""
    assert q_or_dq.target in QUANTIZE | DEQUANTIZE, f"not a q/dq node: {q_or_dq.format_node()}"
    a = q_or_dq.args
    if q_or_dq.target in (qd.quantize_per_channel.default, qd.dequantize_per_channel.default):
        scale, zp, axis, qmin, qmax, dtype = _value(gm, a[1]), _value(gm, a[2]), a[3], a[4], a[5], a[6]
    else:
        scale, zp, axis, qmin, qmax, dtype = _value(gm, a[1]), _value(gm, a[2]), None, a[3], a[4], a[5]
    return QParams(scale.double().reshape(-1), zp.long().reshape(-1), axis, qmin, qmax, dtype)


def nodes(gm: GraphModule, *targets) -> list[Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target in targets]


def only(gm: GraphModule, *targets) -> Node:
    found = nodes(gm, *targets)
    assert len(found) == 1, f"expected one of {targets}, found {[n.name for n in found]}\n{gm.graph}"
    return found[0]


def input_dq(gm: GraphModule, node: Node, value) -> QParams:
    """The dequantize that feeds `value` (an input Node of `node`)."""
    assert isinstance(value, Node) and value.target in DEQUANTIZE, (
        f"{node.name}: input {value} is not dequantized\n{gm.graph}"
    )
    return qparams(gm, value)


def output_q(gm: GraphModule, node: Node) -> QParams:
    """The quantize that reads `node`'s output (its only user)."""
    users = list(node.users)
    assert len(users) == 1 and users[0].target in QUANTIZE, (
        f"{node.name}: output is not quantized (users {[u.name for u in users]})\n{gm.graph}"
    )
    return qparams(gm, users[0])


def getitem_users(node: Node) -> list[Node]:
    return [u for u in node.users if u.target is operator.getitem]


def sqnr_db(reference: torch.Tensor, actual: torch.Tensor) -> float:
    reference, actual = reference.detach(), actual.detach()
    noise = (reference - actual).double().pow(2).mean()
    return float(10 * torch.log10(reference.double().pow(2).mean() / noise.clamp_min(1e-30)))


def settle_batch_norm(model: torch.nn.Module, make_input: Callable[[], tuple], batches: int = 8) -> torch.nn.Module:
    """Give every batch norm realistic statistics (cumulative averages over a few train-mode batches) and
    non-trivial affine parameters, then switch to eval."""
    gen = torch.Generator().manual_seed(123)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.momentum = None
            m.reset_running_stats()
            with torch.no_grad():
                m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=gen))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=gen))
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(*make_input())
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.momentum = 0.1  # a cumulative average (None) would make train-mode export data dependent
    return model.eval()

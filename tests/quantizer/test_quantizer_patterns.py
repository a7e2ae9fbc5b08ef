"""Per-pattern checks of NeutronQuantizer: after prepare/calibrate/convert, the q/dq nodes around each op are
what LiteRT's int8 kernels require (written out here, independently of the quantizer's own specs):

- activations: int8 per tensor, [-128, 127];
- conv/linear weights: int8, [-127, 127], zero point 0, per output channel (axis 0; axis 1 for conv_transpose);
- bias: int32, zero point 0, scale == input scale * weight scale per channel;
- LOGISTIC / SOFTMAX output (1/256, -128), TANH output (1/128, 0);
- pools, reshapes, transposes, pads, slices, nearest upsampling, concat (all inputs): output qparams == input's;
- fused patterns: no q/dq between the ops of conv[+bn][+act], linear[+bn][+act], add/mul[+relu]; no batch norm.
Every case also checks the quantized output against the float model (sanity bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from quantizer_testing import (
    DEQUANTIZE,
    QUANTIZE,
    input_dq,
    nodes,
    only,
    output_q,
    quantize_ptq,
    settle_batch_norm,
    sqnr_db,
)

aten = torch.ops.aten
INT8_ACT = (-128, 127, torch.int8)
BATCH_NORMS = (aten.batch_norm.default, aten._native_batch_norm_legit_no_training.default)


class Fn(nn.Module):
    """A function of the inputs, with optional submodules/parameters reachable as `self.<name>`."""

    def __init__(self, fn: Callable, **children):
        super().__init__()
        self.fn = fn
        for name, child in children.items():
            if isinstance(child, torch.Tensor):
                self.register_parameter(name, nn.Parameter(child))
            else:
                self.add_module(name, child)

    def forward(self, *xs):
        return self.fn(self, *xs)


@dataclass
class Case:
    make: Callable[[], nn.Module]
    shapes: tuple  # input shapes (distinct extents so that a wrong axis cannot pass by accident)
    op: object  # the aten op that anchors the pattern, as torch.export produces it
    tail: tuple = ()  # ops fused after the anchor, in order
    weight_axis: int | None = None  # weighted ops: expected per-channel axis (None: per tensor)
    extra: dict = field(default_factory=dict)
    lowered: object = None  # the anchor after the quantizer's ATen passes (conv1d -> conv2d, ...); default: op

    @property
    def anchor(self):
        return self.lowered or self.op

    def inputs(self, seed: int = 0) -> tuple:
        g = torch.Generator().manual_seed(seed)
        return tuple(torch.randn(s, generator=g) for s in self.shapes)


def run(case: Case, quantizer=None):
    model = case.make().eval()
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        settle_batch_norm(model, lambda: case.inputs(seed=torch.randint(1000, ()).item()))
    x = case.inputs()
    gm = quantize_ptq(model, x, calib=[case.inputs(1), case.inputs(2)], quantizer=quantizer)
    if case.op is not None:
        assert case.op in gm.exported_targets, f"torch.export no longer produces {case.op}"
    return model, x, gm


def check_close_to_float(model, gm, x, min_db=25.0):
    ref, out = model(*x), gm(*x)
    refs, outs = (ref, out) if isinstance(ref, (tuple, list)) else ((ref,), (out,))
    for r, o in zip(refs, outs):
        assert sqnr_db(r, o) > min_db, f"SQNR {sqnr_db(r, o):.1f} dB"


def check_int8_act(qp):
    assert (qp.qmin, qp.qmax, qp.dtype) == INT8_ACT and qp.axis is None and qp.scale.numel() == 1


def operands(node):
    """(input, weight, bias) of conv/linear/mm/addmm."""
    if node.target == aten.addmm.default:
        return node.args[1], node.args[2], node.args[0]
    return node.args[0], node.args[1], (node.args[2] if len(node.args) > 2 else None)


def check_weighted(gm, node, weight_axis):
    x, w_dq, bias = operands(node)
    x_qp = input_dq(gm, node, x)
    check_int8_act(x_qp)
    w_qp = input_dq(gm, node, w_dq)
    assert (w_qp.qmin, w_qp.qmax, w_qp.dtype) == (-127, 127, torch.int8)
    assert torch.all(w_qp.zero_point == 0)
    w_int = getattr(gm, w_dq.args[0].target)
    assert w_int.dtype == torch.int8 and int(w_int.min()) >= -127
    if weight_axis is None:
        assert w_qp.axis is None and w_qp.scale.numel() == 1
    else:
        assert w_qp.axis == weight_axis and w_qp.scale.numel() == w_int.shape[weight_axis]
        # symmetric min/max per channel: every channel uses the full [-127, 127] range
        per_channel_max = w_int.abs().transpose(0, weight_axis).reshape(w_int.shape[weight_axis], -1).amax(1)
        assert torch.all(per_channel_max == 127)
    if bias is not None:
        b_qp = input_dq(gm, node, bias)
        assert (b_qp.qmin, b_qp.qmax, b_qp.dtype) == (-(2**31), 2**31 - 1, torch.int32)
        assert torch.all(b_qp.zero_point == 0)
        expected = x_qp.scale * w_qp.scale
        torch.testing.assert_close(b_qp.scale, expected, rtol=1e-6, atol=0)
        if weight_axis is not None:
            assert b_qp.axis == 0


def check_chain(gm, anchor, tail):
    """anchor -> tail[0] -> ... directly (no q/dq between); returns the last node."""
    last = anchor
    for target in tail:
        users = list(last.users)
        assert len(users) == 1 and users[0].target == target, (
            f"{last.name} should feed {target} directly, feeds {[u.format_node() for u in users]}"
        )
        last = users[0]
    return last


# ------------------------------------------------------------------------------------------------ cases

WEIGHTED = {
    "conv1d": Case(
        lambda: nn.Conv1d(3, 5, 3), [(1, 3, 11)], aten.conv1d.default, weight_axis=0, lowered=aten.conv2d.default
    ),
    "conv2d": Case(lambda: nn.Conv2d(3, 6, 3, padding=1), [(1, 3, 10, 7)], aten.conv2d.default, weight_axis=0),
    "conv2d_no_bias_s2": Case(
        lambda: nn.Conv2d(3, 6, (3, 2), stride=2, bias=False), [(1, 3, 10, 7)], aten.conv2d.default, weight_axis=0
    ),
    "depthwise_x2": Case(lambda: nn.Conv2d(6, 12, 3, groups=6), [(1, 6, 9, 7)], aten.conv2d.default, weight_axis=0),
    "conv_transpose2d": Case(
        lambda: nn.ConvTranspose2d(4, 6, 2, stride=2), [(1, 4, 5, 7)], aten.conv_transpose2d.input, weight_axis=1
    ),
    "conv_transpose2d_groups2_per_tensor": Case(
        lambda: nn.ConvTranspose2d(4, 6, 3, groups=2), [(1, 4, 5, 7)], aten.conv_transpose2d.input, weight_axis=None
    ),
    "linear_3d": Case(lambda: nn.Linear(7, 5), [(2, 3, 7)], aten.linear.default, weight_axis=0),
    "linear_no_bias": Case(lambda: nn.Linear(9, 4, bias=False), [(3, 9)], aten.linear.default, weight_axis=0),
    "addmm_const_weight": Case(
        lambda: Fn(lambda s, x: torch.addmm(s.b, x, s.w.t()), w=torch.randn(5, 9), b=torch.randn(5)),
        [(3, 9)],
        aten.addmm.default,
        weight_axis=1,
    ),
    "mm_const_weight": Case(
        lambda: Fn(lambda s, x: torch.mm(x, s.w), w=torch.randn(9, 5)), [(3, 9)], aten.mm.default, weight_axis=1
    ),
}

FUSED = {
    "conv_bn_relu": Case(
        lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()),
        [(1, 3, 10, 7)],
        aten.conv2d.default,
        tail=(aten.relu.default,),
        weight_axis=0,
    ),
    "conv_bn": Case(
        lambda: nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8)),
        [(1, 3, 10, 7)],
        aten.conv2d.default,
        weight_axis=0,
    ),
    "conv_relu_inplace": Case(
        lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(inplace=True)),
        [(1, 3, 10, 7)],
        aten.conv2d.default,
        tail=(aten.relu_.default,),
        weight_axis=0,
    ),
    "conv_relu6_module": Case(
        lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU6()),
        [(1, 3, 10, 7)],
        aten.conv2d.default,
        tail=(aten.hardtanh.default,),
        weight_axis=0,
    ),
    "conv_relu6_inplace": Case(
        lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU6(inplace=True)),
        [(1, 3, 10, 7)],
        aten.conv2d.default,
        tail=(aten.hardtanh_.default,),
        weight_axis=0,
    ),
    "conv_relu6_functional": Case(
        lambda: Fn(lambda s, x: F.relu6(s.c(x)), c=nn.Conv2d(3, 8, 3)),
        [(1, 3, 10, 7)],
        aten.conv2d.default,
        tail=(aten.relu6.default,),
        weight_axis=0,
    ),
    "conv_clamp": Case(
        lambda: Fn(lambda s, x: torch.clamp(s.c(x), -1.0, 1.0), c=nn.Conv2d(3, 8, 3)),
        [(1, 3, 10, 7)],
        aten.conv2d.default,
        tail=(aten.clamp.default,),
        weight_axis=0,
    ),
    "dw_bn_hardtanh": Case(
        lambda: nn.Sequential(nn.Conv2d(6, 6, 3, groups=6), nn.BatchNorm2d(6), nn.Hardtanh(-1.0, 1.0)),
        [(1, 6, 9, 7)],
        aten.conv2d.default,
        tail=(aten.hardtanh.default,),
        weight_axis=0,
    ),
    "conv1d_bn_relu": Case(
        lambda: nn.Sequential(nn.Conv1d(3, 5, 3), nn.BatchNorm1d(5), nn.ReLU()),
        [(1, 3, 11)],
        aten.conv1d.default,
        tail=(aten.relu.default,),  # the squeeze of conv1d -> conv2d moves below the relu
        weight_axis=0,
        lowered=aten.conv2d.default,
    ),
    "conv_transpose_bn_relu": Case(
        lambda: nn.Sequential(nn.ConvTranspose2d(4, 6, 2, stride=2), nn.BatchNorm2d(6), nn.ReLU()),
        [(1, 4, 5, 7)],
        aten.conv_transpose2d.input,
        tail=(aten.relu.default,),
        weight_axis=1,
    ),
    "linear_bn1d_relu": Case(
        lambda: nn.Sequential(nn.Linear(9, 6), nn.BatchNorm1d(6), nn.ReLU()),
        [(4, 9)],
        aten.linear.default,
        tail=(aten.relu.default,),
        weight_axis=0,
    ),
    "linear_relu": Case(
        lambda: nn.Sequential(nn.Linear(9, 6), nn.ReLU()),
        [(4, 9)],
        aten.linear.default,
        tail=(aten.relu.default,),
        weight_axis=0,
    ),
    "add_relu": Case(lambda: Fn(lambda s, x, y: F.relu(x + y)), [(1, 3, 10, 7)] * 2, aten.add.Tensor, tail=(aten.relu.default,)),
    "mul_relu": Case(lambda: Fn(lambda s, x, y: F.relu(x * y)), [(1, 3, 10, 7)] * 2, aten.mul.Tensor, tail=(aten.relu.default,)),
}

FIXED = {
    "sigmoid": Case(lambda: nn.Sigmoid(), [(1, 3, 10, 7)], aten.sigmoid.default, extra={"qp": (1 / 256, -128)}),
    "softmax_last": Case(lambda: nn.Softmax(-1), [(1, 3, 10, 7)], aten.softmax.int, extra={"qp": (1 / 256, -128)}),
    "softmax_channels": Case(lambda: nn.Softmax(1), [(1, 3, 10, 7)], aten.softmax.int, extra={"qp": (1 / 256, -128)}),
    "tanh": Case(lambda: nn.Tanh(), [(1, 3, 10, 7)], aten.tanh.default, extra={"qp": (1 / 128, 0)}),
}


def _fn(f):
    return lambda: Fn(lambda s, *x: f(*x))


X4 = [(1, 3, 10, 7)]
X3 = [(1, 3, 11)]
SHARED = {
    "max_pool2d": Case(_fn(lambda x: F.max_pool2d(x, 2)), X4, aten.max_pool2d.default),
    "max_pool1d": Case(
        _fn(lambda x: F.max_pool1d(x, 3, 2)), X3, aten.max_pool1d.default, lowered=aten.max_pool2d.default
    ),
    "avg_pool2d": Case(_fn(lambda x: F.avg_pool2d(x, (3, 2))), X4, aten.avg_pool2d.default),
    "avg_pool1d": Case(
        _fn(lambda x: F.avg_pool1d(x, 2)), X3, aten.avg_pool1d.default, lowered=aten.avg_pool2d.default
    ),
    # a global mean of zero-mean noise is tiny next to the shared input scale: looser sanity bound
    "adaptive_avg_pool2d_1": Case(
        _fn(lambda x: F.adaptive_avg_pool2d(x, 1)), X4, aten.adaptive_avg_pool2d.default, extra={"min_db": 15.0}
    ),
    "adaptive_avg_pool2d_5x7": Case(
        _fn(lambda x: F.adaptive_avg_pool2d(x, (5, 7))), X4, aten.adaptive_avg_pool2d.default
    ),
    "reshape": Case(_fn(lambda x: x.reshape(1, 3, 70)), X4, aten.reshape.default),
    "view": Case(_fn(lambda x: x.view(3, 70)), X4, aten.view.default),
    "flatten": Case(_fn(lambda x: torch.flatten(x, 1)), X4, aten.flatten.using_ints),
    "permute": Case(_fn(lambda x: x.permute(0, 2, 3, 1)), X4, aten.permute.default),
    "transpose": Case(_fn(lambda x: x.transpose(1, 3)), X4, aten.transpose.int),
    "squeeze": Case(_fn(lambda x: x.squeeze(0)), X4, aten.squeeze.dim),
    "unsqueeze": Case(_fn(lambda x: x.unsqueeze(2)), X4, aten.unsqueeze.default),
    "pad": Case(_fn(lambda x: F.pad(x, (1, 2, 0, 1))), X4, aten.pad.default),
    "constant_pad_nd": Case(_fn(lambda x: torch.constant_pad_nd(x, [2, 1])), X4, aten.constant_pad_nd.default),
    "clone": Case(_fn(lambda x: x.clone()), X4, aten.clone.default),
    "slice": Case(_fn(lambda x: x[:, :, 2:9]), X4, aten.slice.Tensor),
    "upsample_nearest2d": Case(_fn(lambda x: F.interpolate(x, scale_factor=2)), X4, aten.upsample_nearest2d.vec),
    # LiteRT int8 RESIZE_BILINEAR keeps the input's qparams
    "upsample_bilinear2d": Case(
        _fn(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)),
        X4,
        aten.upsample_bilinear2d.vec,
    ),
}

OWN = {
    "relu": Case(lambda: nn.ReLU(), X4, aten.relu.default),
    "relu_inplace": Case(lambda: nn.ReLU(inplace=True), X4, aten.relu_.default),
    "relu6": Case(_fn(F.relu6), X4, aten.relu6.default),
    "hardtanh": Case(lambda: nn.Hardtanh(-0.5, 0.5), X4, aten.hardtanh.default),
    "clamp": Case(_fn(lambda x: torch.clamp(x, -1.0, 0.5)), X4, aten.clamp.default),
    "leaky_relu": Case(lambda: nn.LeakyReLU(0.1), X4, aten.leaky_relu.default),
    "prelu": Case(lambda: nn.PReLU(3, init=0.2), X4, aten.prelu.default),
    "abs": Case(_fn(torch.abs), X4, aten.abs.default),
    "neg": Case(_fn(torch.neg), X4, aten.neg.default),
    "hardswish": Case(lambda: nn.Hardswish(), X4, aten.hardswish.default),
    "div_by_constant": Case(_fn(lambda x: x / 3.0), X4, aten.div.Tensor, lowered=aten.mul.Tensor),
    "div_by_constant_tensor": Case(
        lambda: Fn(lambda s, x: x / s.d, d=torch.tensor([2.0, -4.0, 0.5]).reshape(1, 3, 1, 1)),
        X4,
        aten.div.Tensor,
        lowered=aten.mul.Tensor,
    ),
    "sub": Case(_fn(lambda x, y: x - y), X4 * 2, aten.sub.Tensor),
    "add": Case(_fn(lambda x, y: x + y), X4 * 2, aten.add.Tensor),
    "add_broadcast": Case(_fn(lambda x, y: x + y), [(1, 3, 10, 7), (1, 3, 1, 7)], aten.add.Tensor),
    "add_scalar": Case(_fn(lambda x: x + 0.5), X4, aten.add.Tensor),
    "mul": Case(_fn(lambda x, y: x * y), X4 * 2, aten.mul.Tensor),
    "mul_scalar": Case(_fn(lambda x: x * 0.25), X4, aten.mul.Tensor),
    "bmm": Case(_fn(torch.bmm), [(2, 3, 5), (2, 5, 4)], aten.bmm.default),
    "matmul": Case(_fn(torch.matmul), [(3, 5), (5, 4)], aten.matmul.default, lowered=aten.mm.default),
    "matmul_3d": Case(_fn(torch.matmul), [(2, 3, 5), (2, 5, 4)], aten.matmul.default, lowered=aten.bmm.default),
    "mm": Case(_fn(torch.mm), [(3, 5), (5, 4)], aten.mm.default),
    "mean_dim": Case(_fn(lambda x: x.mean((2, 3), keepdim=True)), X4, aten.mean.dim),
    "mean_last": Case(_fn(lambda x: x.mean(-1)), X4, aten.mean.dim),
}


# ------------------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("case", [*WEIGHTED.values(), *FUSED.values()], ids=[*WEIGHTED, *FUSED])
def test_weighted_and_fused(case: Case):
    model, x, gm = run(case)
    assert not nodes(gm, *BATCH_NORMS), "batch norm must be folded"
    anchor = only(gm, case.anchor)
    if case.anchor in (aten.add.Tensor, aten.mul.Tensor):
        for a in anchor.args:
            check_int8_act(input_dq(gm, anchor, a))
    else:
        check_weighted(gm, anchor, case.weight_axis)
    last = check_chain(gm, anchor, case.tail)
    check_int8_act(output_q(gm, last))
    check_close_to_float(model, gm, x)


@pytest.mark.parametrize("case", FIXED.values(), ids=FIXED.keys())
def test_fixed_output_qparams(case: Case):
    model, x, gm = run(case)
    node = only(gm, case.anchor)
    check_int8_act(input_dq(gm, node, node.args[0]))
    out = output_q(gm, node)
    check_int8_act(out)
    scale, zero_point = case.extra["qp"]
    assert float(out.scale) == scale and int(out.zero_point) == zero_point
    check_close_to_float(model, gm, x)


@pytest.mark.parametrize("case", SHARED.values(), ids=SHARED.keys())
def test_shared_qparams(case: Case):
    model, x, gm = run(case)
    node = only(gm, case.anchor)
    qp_in = input_dq(gm, node, node.args[0])
    check_int8_act(qp_in)
    assert output_q(gm, node).same_as(qp_in), "output qparams must equal the input's"
    check_close_to_float(model, gm, x, case.extra.get("min_db", 25.0))


@pytest.mark.parametrize("case", OWN.values(), ids=OWN.keys())
def test_own_output_qparams(case: Case):
    model, x, gm = run(case)
    node = only(gm, case.anchor)
    tensor_inputs = [a for a in node.args if isinstance(a, torch.fx.Node)]
    assert tensor_inputs
    for a in tensor_inputs:
        check_int8_act(input_dq(gm, node, a))
    check_int8_act(output_q(gm, node))
    check_close_to_float(model, gm, x)


def test_cat_shares_one_set_of_qparams_for_all_inputs_and_output():
    model = Fn(
        lambda s, x, y, z: torch.cat([x, torch.sigmoid(y), s.c(z)], dim=1), c=nn.Conv2d(4, 2, 3, padding=1)
    ).eval()
    case = Case(lambda: model, [(1, 3, 10, 7), (1, 5, 10, 7), (1, 4, 10, 7)], aten.cat.default)
    model, x, gm = run(case)
    node = only(gm, aten.cat.default)
    out = output_q(gm, node)
    check_int8_act(out)
    assert len(node.args[0]) == 3
    for t in node.args[0]:
        assert input_dq(gm, node, t).same_as(out)
    check_close_to_float(model, gm, x)


@pytest.mark.parametrize(
    "fn, op",
    [
        (lambda x: x.split(2, dim=1), aten.split.Tensor),
        (lambda x: x.split([1, 4], dim=1), aten.split_with_sizes.default),
        (lambda x: x.chunk(2, dim=-1), aten.chunk.default),
    ],
    ids=["split", "split_with_sizes", "chunk"],
)
def test_split_pieces_share_input_qparams(fn, op):
    """split/chunk become one slice per piece (ATen pass); every piece keeps the input's qparams."""
    model, x, gm = run(Case(_fn(fn), [(1, 5, 10, 8)], op))
    pieces = nodes(gm, aten.slice.Tensor, aten.split.Tensor, aten.split_with_sizes.default, aten.chunk.default)
    assert len(pieces) >= 2 and all(p.target == aten.slice.Tensor for p in pieces)
    qp_in = input_dq(gm, pieces[0], pieces[0].args[0])
    for piece in pieces:
        assert input_dq(gm, piece, piece.args[0]).same_as(qp_in)
        assert output_q(gm, piece).same_as(qp_in)
    check_close_to_float(model, gm, x)


def test_residual_add_is_fully_int8():
    model = Fn(lambda s, x: x + s.c(x), c=nn.Conv2d(3, 3, 3, padding=1))
    _, _, gm = run(Case(lambda: model, X4, aten.add.Tensor))
    add = only(gm, aten.add.Tensor)
    for a in add.args:
        check_int8_act(input_dq(gm, add, a))
    check_int8_act(output_q(gm, add))


def test_unlisted_ops_stay_float():
    model = Fn(lambda s, x: (torch.sin(s.c(x)), torch.erf(x)), c=nn.Conv2d(3, 3, 1))
    _, x, gm = run(Case(lambda: model, X4, None))
    for op in (aten.sin.default, aten.erf.default):
        node = only(gm, op)
        assert all(u.target not in QUANTIZE for u in node.users), f"{op} output must stay float"
    erf = only(gm, aten.erf.default)
    assert erf.args[0].op == "placeholder"  # no quantize/dequantize inserted for a float-only consumer
    sin = only(gm, aten.sin.default)
    assert sin.args[0].target in DEQUANTIZE  # reads the conv's int8 output


def test_model_input_quantized_by_first_op_spec():
    _, _, gm = run(Case(lambda: nn.Conv2d(3, 4, 3), X4, None))
    (placeholder,) = [n for n in gm.graph.nodes if n.op == "placeholder"]
    (q,) = [u for u in placeholder.users if u.target in QUANTIZE]
    assert (q.args[3], q.args[4], q.args[5]) == INT8_ACT


# Every op of the Neutron operator table (plus hardswish), as it appears after torch.export in torch 2.13.
REQUIRED_OPS = {
    aten.abs.default, aten.neg.default, aten.relu.default, aten.relu_.default, aten.sigmoid.default,
    aten.tanh.default, aten.leaky_relu.default, aten.clone.default, aten.squeeze.dim, aten.unsqueeze.default,
    aten.view.default, aten.reshape.default, aten.flatten.using_ints, aten.adaptive_avg_pool2d.default,
    aten.avg_pool1d.default, aten.avg_pool2d.default, aten.addmm.default, aten.mm.default, aten.linear.default,
    aten.add.Tensor, aten.bmm.default, aten.matmul.default, aten.cat.default, aten.clamp.default,
    aten.hardtanh.default, aten.hardtanh_.default, aten.relu6.default, aten.constant_pad_nd.default,
    aten.pad.default, aten.conv1d.default, aten.conv2d.default, aten.conv_transpose2d.input, aten.div.Tensor,
    aten.max_pool1d.default, aten.max_pool2d.default, aten.mean.dim, aten.mul.Tensor, aten.permute.default,
    aten.transpose.int, aten.prelu.default, aten.slice.Tensor, aten.split.Tensor, aten.split_with_sizes.default,
    aten.chunk.default, aten.softmax.int, aten.upsample_bilinear2d.vec, aten.upsample_nearest2d.vec,
    aten.hardswish.default, aten.sub.Tensor, aten.dropout.default,
}  # fmt: skip


def test_every_required_op_is_tested_here():
    tested = {c.op for table in (WEIGHTED, FUSED, FIXED, SHARED, OWN) for c in table.values()}
    tested |= {t for table in (FUSED,) for c in table.values() for t in c.tail}
    tested |= {aten.cat.default} | set(REWRITTEN_BY_PASSES)
    assert REQUIRED_OPS <= tested, sorted(map(str, REQUIRED_OPS - tested))


#: ops of REQUIRED_OPS that NeutronQuantizer's ATen passes rewrite before annotation (so they need no annotation)
REWRITTEN_BY_PASSES = {
    aten.matmul.default: lambda: (_fn(lambda x, y: x @ y), [(2, 8, 16), (2, 16, 8)]),
    aten.split.Tensor: lambda: (_fn(lambda x: x.split(2, dim=1)[0] * 2), [(1, 5, 10, 8)]),
    aten.split_with_sizes.default: lambda: (_fn(lambda x: x.split([1, 4], dim=1)[1] * 2), [(1, 5, 10, 8)]),
    aten.chunk.default: lambda: (_fn(lambda x: x.chunk(2, dim=-1)[0] * 2), [(1, 5, 10, 8)]),
    aten.max_pool1d.default: lambda: (lambda: nn.MaxPool1d(2), [(1, 8, 16)]),
    aten.avg_pool1d.default: lambda: (lambda: nn.AvgPool1d(2), [(1, 8, 16)]),
    aten.dropout.default: lambda: (lambda: nn.Sequential(nn.Dropout(0.3), nn.ReLU()), X4),
    aten.glu.default: lambda: (_fn(lambda x: F.glu(x, 1)), [(1, 6, 10, 7)]),
    aten.square.default: lambda: (_fn(torch.square), [(2, 10)]),
    aten.pow.Tensor_Scalar: lambda: (_fn(lambda x: torch.pow(x, 3)), [(2, 10)]),
    aten.threshold.default: lambda: (lambda: nn.Threshold(0.0, 0.0), [(20,)]),
    aten.hardsigmoid.default: lambda: (lambda: nn.Hardsigmoid(), [(2, 10)]),
}


@pytest.mark.parametrize("op", REWRITTEN_BY_PASSES, ids=str)
def test_ops_rewritten_by_passes_are_gone_before_annotation(op):
    make, shapes = REWRITTEN_BY_PASSES[op]()
    _, _, gm = run(Case(make, shapes, op))
    assert not nodes(gm, op), f"{op} should have been rewritten by an ATen pass"


def test_every_documented_op_is_annotated_from_the_registry_or_rewritten():
    """REQUIRED_OPS is written from the documented table; the quantizer's table comes from the operator registry
    (`ops.registry.annotation_table`): every documented op is annotated or removed by a pass before annotation."""
    from executorch_neutron.ops import registry
    from executorch_neutron.quantizer import NeutronQuantizer

    annotated = set(NeutronQuantizer.supported_ops())
    assert annotated == {str(op) for op in registry.annotation_table()}
    missing = {str(op) for op in REQUIRED_OPS - set(REWRITTEN_BY_PASSES)} - annotated
    assert not missing, sorted(missing)


def test_quantizer_fuses_an_activation_only_when_the_converter_does():
    """conv + clamp(-0.5, 1.5): bounds no fused TFLite activation has, so the conv output gets its own quantize
    node and the clamp shares it (computed as MAXIMUM/MINIMUM); conv + clamp(-1, 1) fuses (RELU_N1_TO_1)."""
    case = Case(lambda: Fn(lambda s, x: torch.clamp(s.c(x), -0.5, 1.5), c=nn.Conv2d(3, 8, 3)), [(1, 3, 10, 7)],
                aten.conv2d.default)
    _, _, gm = run(case)
    conv, clamp = only(gm, aten.conv2d.default), only(gm, aten.clamp.default)
    assert conv.users and all(u.target in QUANTIZE for u in conv.users)
    assert output_q(gm, clamp).same_as(input_dq(gm, clamp, clamp.args[0]))

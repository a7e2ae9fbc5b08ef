"""The architecture-family passes: each rewritten graph computes what the original did (float, before
quantization), the op it replaces is gone, and the cases it must not touch are left alone."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron.passes.hardsigmoid_to_conv import hardsigmoid_to_conv
from executorch_neutron.passes.max_pool_padding import max_pool_padding
from executorch_neutron.passes.permute_rank4 import permute_rank4
from executorch_neutron.passes.remove_noops import remove_noops
from executorch_neutron.passes import run_passes as run_aten_passes
from executorch_neutron.passes.silu_to_sigmoid_mul import silu_to_sigmoid_mul
from executorch_neutron.passes.permute_rank4 import merged
from executorch_neutron.models.zoo import warm_up_batch_norm

from harness import Fn, assert_within_steps, lower_and_run

aten = torch.ops.aten


def _shuffle(s, a):
    n, c, h, w = a.shape
    return a.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w) * 2


def targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def ranks(gm, ops):
    return [n.args[0].meta["val"].dim() for n in gm.graph.nodes if n.target in ops]


# name: (model factory, input shape, pass, op that must be gone, op that must be present)
CASES = {
    "shuffle": (lambda: Fn(_shuffle), (1, 16, 5, 3), lambda gm: permute_rank4(remove_noops(gm)),
                aten.transpose.int, aten.permute.default),
    "hardsigmoid": (lambda: nn.Hardsigmoid(), (1, 8, 3, 5), hardsigmoid_to_conv, aten.hardsigmoid.default,
                    aten.conv2d.default),
    "silu": (lambda: nn.SiLU(), (1, 8, 3, 5), silu_to_sigmoid_mul, aten.silu.default, aten.sigmoid.default),
    "max_pool_stem": (lambda: nn.Sequential(nn.ReLU(), nn.MaxPool2d(3, 2, 1)), (1, 8, 12, 10), max_pool_padding,
                      None, aten.constant_pad_nd.default),
    "max_pool_ceil": (lambda: nn.Sequential(nn.ReLU6(), nn.MaxPool2d(3, 2, ceil_mode=True)), (1, 8, 12, 14),
                      max_pool_padding, None, aten.constant_pad_nd.default),
    "max_pool_ceil_after_cat": (lambda: Fn(lambda s, a: F.max_pool2d(torch.cat([a.relu(), a.sigmoid()], 1), 3, 2,
                                                                     ceil_mode=True)), (1, 8, 10, 12),
                                max_pool_padding, None, aten.constant_pad_nd.default),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_pass_preserves_values(case):
    make, shape, fn, gone, present = case
    torch.manual_seed(0)
    x = torch.randn(*shape)
    model = make()
    model = warm_up_batch_norm(model, (x,)) if any(isinstance(m, nn.BatchNorm2d) for m in model.modules()) else model
    gm = torch.export.export(model.eval(), (x,), strict=False).module()
    expected = model(x)
    gm = fn(gm)
    after = targets(gm)
    assert gone is None or gone not in after, after
    assert present in after, after
    torch.testing.assert_close(gm(x), expected, rtol=1e-4, atol=1e-5)


def test_channel_shuffle_becomes_rank4_permute_between_reshapes():
    x = torch.randn(1, 16, 5, 3)
    gm = run_aten_passes(torch.export.export(Fn(_shuffle), (x,), strict=False).module())
    assert ranks(gm, {aten.permute.default}) == [4]
    assert all(n.meta["val"].dim() == 4 for n in gm.graph.nodes if n.op == "call_function")
    assert [list(n.args[1]) for n in gm.graph.nodes if n.target == aten.permute.default] == [[0, 2, 1, 3]]
    torch.testing.assert_close(gm(x), _shuffle(None, x))


@pytest.mark.parametrize("shape, perm, expected", [
    ((1, 2, 16, 5, 3), (0, 2, 1, 3, 4), ([1, 2, 16, 15], [0, 2, 1, 3])),
    ((2, 3, 4, 5, 6), (0, 3, 4, 1, 2), ([2, 12, 30], [0, 2, 1])),
    ((2, 3, 4, 5, 6), (4, 3, 2, 1, 0), ([2, 3, 4, 5, 6], [4, 3, 2, 1, 0])),  # nothing to merge
], ids=["shuffle", "two_runs", "reverse"])
def test_merged_permutation(shape, perm, expected):
    assert merged(list(shape), list(perm)) == expected
    x = torch.randn(*shape)
    new_shape, new_perm = expected
    torch.testing.assert_close(x.reshape(new_shape).permute(new_perm).reshape(x.permute(perm).shape),
                               x.permute(perm))


@pytest.mark.parametrize("model, shape", [
    (nn.MaxPool2d(3, 2, 1), (1, 8, 12, 10)),
    (nn.MaxPool2d(3, 2, ceil_mode=True), (1, 8, 12, 14)),
    (nn.MaxPool2d(5, 2, 2, ceil_mode=True), (1, 8, 10, 13)),
], ids=["stem", "ceil", "k5_p2_ceil"])
def test_max_pool_of_signed_input_replicates_edges(model, shape):
    """Input that may be negative: a zero pad would change the result; edges are replicated (slices + cat)."""
    x = torch.randn(*shape) - 1.0
    gm = max_pool_padding(torch.export.export(model, (x,), strict=False).module())
    after = targets(gm)
    assert aten.constant_pad_nd.default not in after and aten.cat.default in after, after
    torch.testing.assert_close(gm(x), model(x))


@pytest.mark.parametrize("model, shape", [
    (nn.Sequential(nn.ReLU(), nn.MaxPool2d(3, 2, 1)), (1, 8, 11, 11)),  # already SAME padding
    (nn.Sequential(nn.ReLU(), nn.MaxPool2d(2, 2, dilation=2, padding=1)), (1, 8, 12, 10)),  # dilated
], ids=["same_padding", "dilation"])
def test_max_pool_padding_leaves_alone(model, shape):
    x = torch.randn(*shape)
    gm = max_pool_padding(torch.export.export(model, (x,), strict=False).module())
    assert {aten.constant_pad_nd.default, aten.cat.default}.isdisjoint(targets(gm))
    torch.testing.assert_close(gm(x), model(x))


@pytest.mark.parametrize("pool", [nn.MaxPool2d(3, 2, ceil_mode=True), nn.AvgPool2d(3, 2, ceil_mode=True)],
                         ids=["max", "avg"])
def test_ceil_mode_without_extra_window_is_turned_off(pool):
    x = torch.randn(1, 8, 11, 13)  # (11 - 3) / 2 and (13 - 3) / 2 are whole: ceil_mode adds no window
    gm = max_pool_padding(torch.export.export(pool, (x,), strict=False).module())
    node = next(n for n in gm.graph.nodes if n.target in (aten.max_pool2d.default, aten.avg_pool2d.default))
    schema_names = [a.name for a in node.target._schema.arguments]
    i = schema_names.index("ceil_mode")
    assert (node.args[i] if i < len(node.args) else node.kwargs.get("ceil_mode")) is False
    torch.testing.assert_close(gm(x), pool(x))


def test_remove_noops_keeps_views_legal_after_dropping_a_copy():
    """view -> transpose -> contiguous -> view: without the copy the second view needs reshape semantics."""
    x = torch.randn(1, 16, 5, 3)
    gm = remove_noops(torch.export.export(Fn(_shuffle), (x,), strict=False).module())
    assert aten.contiguous.default not in targets(gm)
    torch.testing.assert_close(gm(x), _shuffle(None, x))


PERMUTATIONS = {  # name: (input shape, permutation) with no rank-4 batch-first form of their own
    "rank5_no_adjacent_dims": ((1, 2, 3, 4, 6), (0, 2, 1, 4, 3)),
    "batch_moves": ((2, 8, 4, 6), (1, 0, 2, 3)),
    "batched_head_split": ((4, 6, 3, 2, 8), (2, 0, 3, 1, 4)),  # [B, T, 3, heads, D] -> [3, B, heads, T, D]
}


@pytest.mark.parametrize("case", PERMUTATIONS.values(), ids=PERMUTATIONS.keys())
def test_permutation_without_a_direct_form_is_delegated(case):
    """Rewritten into one or two runnable transposes between reshapes: all on the NPU, exact (1 step: the mul)."""
    shape, perm = case
    torch.manual_seed(0)
    r = lower_and_run(Fn(lambda s, a: torch.relu(a).permute(*perm) * 2.0), (torch.randn(*shape),))
    assert r.rejections == [], str(r.result.report)
    assert_within_steps(r.output, r.reference, 1, r.output_scale)

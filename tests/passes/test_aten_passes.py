"""Each ATen pass: the rewritten graph computes what the original did, and the ops it removes are gone."""

import pytest
import torch
from torch import nn

from executorch_neutron.passes.conv1d_to_conv2d import conv1d_to_conv2d
from executorch_neutron.passes.div_to_mul import div_to_mul
from executorch_neutron.passes.matmul_to_bmm import matmul_to_bmm
from executorch_neutron.passes.mean1d_to_mean2d import mean1d_to_mean2d
from executorch_neutron.passes.pool1d_to_pool2d import pool1d_to_pool2d
from executorch_neutron.passes.remove_noops import remove_noops
from executorch_neutron.passes.split_to_slices import split_to_slices

from harness import Fn

pytestmark = pytest.mark.fast

aten = torch.ops.aten



def targets(gm):
    return {n.target for n in gm.graph.nodes if n.op == "call_function"}


CASES = {
    "conv1d": (conv1d_to_conv2d, lambda: nn.Conv1d(4, 8, 3, stride=2, padding=1, dilation=1), (1, 4, 13),
               aten.conv1d.default, aten.conv2d.default),
    "conv1d_dw_dil": (conv1d_to_conv2d, lambda: nn.Conv1d(8, 8, 3, padding=2, dilation=2, groups=8), (1, 8, 11),
                      aten.conv1d.default, aten.conv2d.default),
    "conv_transpose1d": (conv1d_to_conv2d, lambda: nn.ConvTranspose1d(4, 8, 3, stride=2, padding=1,
                                                                      output_padding=1), (1, 4, 9),
                         aten.conv_transpose1d.default, aten.conv_transpose2d.input),
    "max_pool1d": (pool1d_to_pool2d, lambda: nn.MaxPool1d(3, 2, 1), (1, 8, 13), aten.max_pool1d.default,
                   aten.max_pool2d.default),
    "avg_pool1d": (pool1d_to_pool2d, lambda: nn.AvgPool1d(2), (2, 8, 10), aten.avg_pool1d.default,
                   aten.avg_pool2d.default),
    "adaptive_avg_pool1d": (mean1d_to_mean2d, lambda: nn.AdaptiveAvgPool1d(1), (1, 8, 10),
                            aten.adaptive_avg_pool1d.default, aten.mean.dim),
    "div_scalar": (div_to_mul, lambda: Fn(lambda s, a: a / 4.0), (1, 8, 3, 5), aten.div.Tensor, aten.mul.Tensor),
    "div_const": (div_to_mul, lambda: Fn(lambda s, a: a / s.mods[0].weight, nn.Linear(5, 5)), (1, 8, 5, 5),
                  aten.div.Tensor, aten.mul.Tensor),
    "split": (split_to_slices, lambda: Fn(lambda s, a: [t + 1 for t in torch.split(a, 3, 1)]), (1, 8, 3, 5),
              aten.split.Tensor, aten.slice.Tensor),
    "split_sizes": (split_to_slices, lambda: Fn(lambda s, a: torch.split(a, [2, 6], 2)[1] * 2), (1, 3, 8, 5),
                    aten.split_with_sizes.default, aten.slice.Tensor),
    "chunk": (split_to_slices, lambda: Fn(lambda s, a: torch.chunk(a, 3, -1)[2] - 1), (1, 3, 4, 8),
              aten.chunk.default, aten.slice.Tensor),
    "matmul_3d": (matmul_to_bmm, lambda: Fn(lambda s, a: a @ a.transpose(1, 2)), (2, 8, 5), aten.matmul.default,
                  aten.bmm.default),
    "matmul_2d": (matmul_to_bmm, lambda: Fn(lambda s, a: a @ a.t()), (8, 5), aten.matmul.default, aten.mm.default),
    "clone": (remove_noops, lambda: Fn(lambda s, a: torch.relu(a).clone() + 1), (1, 8, 3, 5), aten.clone.default,
              None),
    "same_view": (remove_noops, lambda: Fn(lambda s, a: torch.relu(a).reshape(1, 8, 3, 5) + 1), (1, 8, 3, 5),
                  aten.reshape.default, None),
    "same_size_bilinear": (remove_noops, lambda: Fn(lambda s, a: torch.nn.functional.interpolate(
        torch.relu(a), size=(3, 5), mode="bilinear") + 1), (1, 8, 3, 5), aten.upsample_bilinear2d.vec, None),
    "same_size_nearest": (remove_noops, lambda: Fn(lambda s, a: torch.nn.functional.interpolate(
        torch.relu(a), size=(3, 5), mode="nearest") + 1), (1, 8, 3, 5), aten.upsample_nearest2d.vec, None),
}


def test_a_resize_with_a_scale_other_than_one_is_kept():
    """1.05 on 8 pixels keeps the size (floor(8.4) = 8) but moves the sampling points: not an identity."""
    model = Fn(lambda s, a: torch.nn.functional.interpolate(a, scale_factor=1.05, mode="bilinear") + 1)
    x = torch.randn(1, 2, 8, 8)
    gm = remove_noops(torch.export.export(model.eval(), (x,), strict=False).module())
    assert aten.upsample_bilinear2d.vec in targets(gm)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_pass_preserves_values(case):
    fn, make, shape, gone, present = case
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(*shape)
    gm = torch.export.export(model, (x,), strict=False).module()
    before = targets(gm)
    assert gone in before, f"export produced no {gone} (spelled differently?): {before}"
    expected = gm(x)
    gm = fn(gm)
    after = targets(gm)
    assert gone not in after
    if present is not None:
        assert present in after
    got = gm(x)
    for g, e in zip(got if isinstance(got, (list, tuple)) else [got],
                    expected if isinstance(expected, (list, tuple)) else [expected]):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn, shape, rewritten", [
    (lambda s, a: a.mean(-1), (2, 8, 13), True),
    (lambda s, a: a.mean(2, keepdim=True), (1, 8, 9), True),
    (lambda s, a: a.mean(1), (1, 8, 9), False),  # over channels: not a mean over the length, left as it is
    (lambda s, a: a.mean((-1, -2)), (1, 8, 3, 9), False),  # already 4D
], ids=["length", "length_keepdim", "channels", "4d"])
def test_mean_over_the_length_becomes_a_4d_mean(fn, shape, rewritten):
    x = torch.randn(*shape)
    gm = torch.export.export(Fn(fn), (x,), strict=False).module()
    expected = gm(x)
    gm = mean1d_to_mean2d(gm)
    ranks = [n.args[0].meta["val"].dim() for n in gm.graph.nodes if n.target == aten.mean.dim]
    assert ranks == ([4] if rewritten else [len(shape)])
    torch.testing.assert_close(gm(x), expected, rtol=1e-5, atol=1e-6)


def test_remove_noops_keeps_input_to_output_clone():
    gm = torch.export.export(Fn(lambda s, a: a.clone()), (torch.randn(2, 3),), strict=False).module()
    assert aten.clone.default in targets(remove_noops(gm))


def test_div_by_tensor_input_is_kept():
    gm = torch.export.export(Fn(lambda s, a, b: a / b), (torch.randn(2, 3), torch.rand(2, 3) + 1), strict=False)
    gm = div_to_mul(gm.module())
    assert aten.div.Tensor in targets(gm)


class ReadsItsCounter(nn.Module):
    """Increments a `num_batches_tracked` buffer and reads it (as a momentum=None batch norm would)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("num_batches_tracked", torch.tensor(3, dtype=torch.long))

    def forward(self, x):
        self.num_batches_tracked.add_(1)
        return x / self.num_batches_tracked


def test_remove_bn_counters_keeps_counters_that_are_read():
    """Train-mode export: a batch norm counter update nobody reads goes; a counter that is read stays."""
    from executorch_neutron.passes.remove_bn_counters import remove_bn_counters

    def counter_updates(gm):
        return [n for n in gm.graph.nodes if n.target == aten.add_.Tensor]

    x = torch.randn(4, 8, 5)
    for model, kept in ((nn.Sequential(nn.Conv1d(8, 8, 3), nn.BatchNorm1d(8)).train(), 0), (ReadsItsCounter(), 1)):
        gm = torch.export.export(model, (x,), strict=False).module()
        assert len(counter_updates(gm)) == 1
        expected = gm(x)
        gm = remove_bn_counters(gm)
        assert len(counter_updates(gm)) == kept
        torch.testing.assert_close(gm(x), expected if kept == 0 else expected * 4 / 5)  # read counter: 4 -> 5

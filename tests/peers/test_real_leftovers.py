"""Issue 42, item 5: the cases real and peer models still left on the CPU, each now rewritten exactly and run on the
NPU of both targets.

- a ViT patch embedding: a convolution whose 8x8 kernel tiles its 32x32 input with stride 8 (Vela: "Stride H must
  be in the range [1, 3]") -> space-to-depth + 1x1 convolution (passes/patch_conv_to_pointwise.py, Ethos-U);
- `torch.norm(x)` of a [5, 5] input, a 0-d scalar, then arithmetic with it (Arm's torch-functions test: "0-d
  (scalar) tensor" on both targets) -> carried as shape [1] (passes/reduce_all_keepdim.py);
- an add of [1, 4, 4, 1] and [1, 1, 4, 4], both broadcasting (Neutron) -> one operand expanded first
  (passes/broadcast_operand_to_expand.py, then expand_to_cat);
- nn.MultiheadAttention on a [3, 2, 4] input (sequence, batch 2): its mean of the attention weights over the heads
  of a batch-2 tensor (Vela: "Batch must be 1") -> a mean on a one-image view (passes/batch_split.py, Ethos-U);
- GroupNorm(4, 32) of a 1x32x32x32 map: its statistics reduce 8192 elements along one axis (Vela: "a reduced width
  or depth axis must be no greater than 4096") -> the same mean over a view that splits the axis
  (passes/mean_axis_split.py, Ethos-U).

Each case: no CPU node (or the exact list), the .pte within 1 output step of PyTorch's quantized model, and, since
each rewrite applies on one back end only, the .pte of the target that rewrites it against the .pte of the one
that does not (same calibration, so the same quantization): an exact rewrite gives the same int8 numbers. Pass
level: each rewrite computes the float function it replaces, and leaves the cases it need not touch alone.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron import lower
from executorch_neutron.passes.batch_split import batch_split
from executorch_neutron.passes.broadcast_operand_to_expand import broadcast_operand_to_expand
from executorch_neutron.passes.mean_axis_split import MEAN_AXIS_MAX, mean_axis_split
from executorch_neutron.passes.patch_conv_to_pointwise import MAX_STRIDE, patch_conv_to_pointwise
from executorch_neutron.passes.reduce_all_keepdim import reduce_all_keepdim
from executorch_neutron.runtime import run
from harness import Fn, model_output_qparams, quantize_np, steps

TARGETS = ("imxrt700", "imx93")
aten = torch.ops.aten


class Attention(nn.Module):
    """nn.MultiheadAttention(4, 2) on (sequence, batch, embedding), returning its output and the attention weights
    averaged over the heads (need_weights=True, the default)."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(4, 2)

    def forward(self, x):
        return self.mha(x, x, x)


#: name -> (module factory, input shapes, the target that rewrites it (the other runs it as written))
CASES = {
    "vit_patch_embedding": (lambda: nn.Conv2d(3, 16, 8, 8), [(1, 3, 32, 32)], "imx93"),
    "norm_scalar_arithmetic": (lambda: Fn(lambda s, x: x * torch.norm(x) + 1.0), [(5, 5)], None),
    "add_both_broadcast": (lambda: Fn(lambda s, a, b: a + b), [(1, 4, 4, 1), (1, 1, 4, 4)], "imxrt700"),
    "mha_batch2_weights": (Attention, [(3, 2, 4)], "imx93"),
    "group_norm_8192": (lambda: nn.GroupNorm(4, 32), [(1, 32, 32, 32)], "imx93"),
}


@functools.cache
def _lowered(name: str, target: str):
    make, shapes, _ = CASES[name]
    torch.manual_seed(0)
    model = make().eval()
    samples = [tuple(torch.randn(*s) for s in shapes) for _ in range(4)]
    return lower(model, samples[0], samples, target=target), samples


def _codes(result, x) -> list[np.ndarray]:
    """The .pte's outputs for inputs `x`, each quantized with PyTorch's quantized model's output parameters."""
    return [quantize_np(o.numpy(), *q) for o, q in zip(run(result.pte, x), model_output_qparams(result.quantized_model))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", CASES)
def test_runs_on_the_npu_within_one_step(name, target):
    result, samples = _lowered(name, target)
    assert [(r.op, r.reason) for r in result.report.rejections] == []
    assert len(result.report.partitions) == 1
    for x in samples[:2]:
        with torch.no_grad():
            ref = result.quantized_model(*x)
        ref = ref if isinstance(ref, (tuple, list)) else (ref,)
        for got, r, q in zip(_codes(result, x), ref, model_output_qparams(result.quantized_model)):
            assert got.shape == tuple(r.shape)
            assert steps(got, quantize_np(r.numpy(), *q)).max() <= 1


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[2]])
def test_the_rewrite_gives_the_numbers_of_the_op_as_written(name):
    """The target that rewrites the case against the one that runs it as written, both calibrated alike: the same
    output quantization (up to float rounding: the rewritten graph adds its float products in another order) and
    the same int8 outputs (an exact rewrite moves data, never rounds again)."""
    rewrites = CASES[name][2]
    (mine, samples), (other, _) = (_lowered(name, t) for t in (rewrites, *set(TARGETS) - {rewrites}))
    for (s, z), (s2, z2) in zip(model_output_qparams(mine.quantized_model), model_output_qparams(other.quantized_model)):
        assert z == z2 and s == pytest.approx(s2, rel=1e-6)
    for x in samples:
        for a, b in zip(_codes(mine, x), _codes(other, x)):
            assert steps(a, b).max() == 0


@pytest.mark.parametrize("target", TARGETS)
def test_a_scalar_result_leaves_only_the_reshape_to_a_scalar(target):
    """torch.norm(x) * 0.5 + 1 returned as a 0-d tensor: the norm and the arithmetic run on the NPU as [1]; only the
    reshape to () (a view, no computation) is left, since a partition's output cannot be 0-d."""
    torch.manual_seed(0)
    samples = [(torch.randn(5, 5),) for _ in range(4)]
    result = lower(Fn(lambda s, x: torch.norm(x) * 0.5 + 1.0).eval(), samples[0], samples, target=target)
    assert [r.op for r in result.report.rejections] == ["aten.view_copy.default"]
    (scale, zp), = model_output_qparams(result.quantized_model)
    for x in samples[:2]:
        out = run(result.pte, x)[0]
        assert out.shape == ()
        with torch.no_grad():
            ref = quantize_np(result.quantized_model(*x).numpy(), scale, zp)
        assert steps(quantize_np(out.numpy(), scale, zp), ref).max() <= 1


# ------------------------------------------------------------------------------------------- pass level


def _graph(fn, *shapes):
    torch.manual_seed(0)
    xs = tuple(torch.randn(*s) for s in shapes)
    return torch.export.export(Fn(fn).eval(), xs, strict=False).module(), xs


def _targets(gm) -> list:
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


_conv = {}


def _conv_fn(k, s, p=0, size=32, cin=3):
    key = (k, s, p, cin)
    if key not in _conv:
        torch.manual_seed(1)
        _conv[key] = nn.Conv2d(cin, 5, k, s, p)
    return lambda _, x: _conv[key](x)


_conv1d = nn.Conv1d(16, 6, 4, 4)  # Wav2Vec2's second feature-encoder layer in a small config
#: name -> (the pass, the function, input shapes, the op it removes or None when it must leave the graph alone)
PASS_CASES = {
    "patch_8x8_stride_8": (patch_conv_to_pointwise, _conv_fn(8, 8), [(1, 3, 32, 32)], "rewritten"),
    "patch_4x4_on_18x17": (patch_conv_to_pointwise, _conv_fn(4, 4), [(2, 3, 18, 17)], "rewritten"),
    "patch_5x5_one_output_row_wide": (patch_conv_to_pointwise, _conv_fn(5, 5), [(1, 3, 5, 20)], "rewritten"),
    "conv1d_4_stride_4_on_319": (patch_conv_to_pointwise, lambda _, x: _conv1d(x), [(1, 16, 319)], "rewritten"),
    "conv1d_10_stride_5_untouched": (patch_conv_to_pointwise, lambda _, x: F.conv1d(x, torch.ones(2, 3, 10), stride=5),
                                     [(1, 3, 64)], None),
    "conv_stride_2_untouched": (patch_conv_to_pointwise, _conv_fn(2, 2), [(1, 3, 32, 32)], None),
    "conv_stride_3_untouched": (patch_conv_to_pointwise, _conv_fn(3, 3), [(1, 3, 12, 12)], None),
    "conv_8x8_stride_8_padded_untouched": (patch_conv_to_pointwise, _conv_fn(8, 8, 1), [(1, 3, 32, 32)], None),
    "conv_8x8_stride_4_untouched": (patch_conv_to_pointwise, lambda _, x: F.conv2d(x, torch.ones(2, 3, 8, 8),
                                                                                   stride=4), [(1, 3, 32, 32)], None),
    "conv_to_1x1_untouched": (patch_conv_to_pointwise, _conv_fn(8, 8, size=8), [(1, 3, 8, 8)], None),
    "add_both_broadcast": (broadcast_operand_to_expand, lambda _, a, b: a + b, [(1, 4, 4, 1), (1, 1, 4, 4)],
                           "rewritten"),
    "max_both_broadcast_ranks": (broadcast_operand_to_expand, lambda _, a, b: torch.maximum(a, b), [(3, 1), (2, 1, 4)],
                                 "rewritten"),
    "add_one_full_untouched": (broadcast_operand_to_expand, lambda _, a, b: a + b, [(1, 4, 4, 4), (1, 1, 4, 4)], None),
    "mul_equal_rank_untouched": (broadcast_operand_to_expand, lambda _, a, b: a * b, [(1, 4, 4, 1), (1, 1, 4, 4)],
                                 None),
    "mean_heads_batch2": (batch_split, lambda _, a: a.mean(1), [(2, 2, 3, 3)], "rewritten"),
    "mean_c_h_keepdim": (batch_split, lambda _, a: a.mean((1, 2), keepdim=True), [(3, 4, 5, 6)], "rewritten"),
    "mean_batch_untouched": (batch_split, lambda _, a: a.mean(0), [(2, 2, 3, 3)], None),
    "mean_heads_batch1_untouched": (batch_split, lambda _, a: a.mean(1), [(1, 2, 3, 3)], None),
    "mean_hw_8192_wide": (mean_axis_split, lambda _, a: a.mean((2, 3), keepdim=True), [(1, 4, 1, 8192)],
                          "rewritten"),
    "mean_hw_2x5000": (mean_axis_split, lambda _, a: a.mean((-1, -2)), [(2, 3, 2, 5000)], "rewritten"),
    "mean_hw_4096_wide_untouched": (mean_axis_split, lambda _, a: a.mean((2, 3)), [(1, 4, 2, 4096)], None),
    "mean_hw_prime_untouched": (mean_axis_split, lambda _, a: a.mean((2, 3)), [(1, 2, 1, 4099)], None),
    "norm_times_x": (reduce_all_keepdim, lambda _, x: x * (x * x).sum().sqrt() + 1.0, [(5, 5)], "rewritten"),
    "sum_chain_scalar": (reduce_all_keepdim, lambda _, x: (x.sum() * 2.0).relu() - x.mean(), [(4, 6)], "rewritten"),
}


@pytest.mark.parametrize("name", PASS_CASES)
def test_each_rewrite_computes_what_it_replaces(name):
    rewrite, fn, shapes, expect = PASS_CASES[name]
    gm, xs = _graph(fn, *shapes)
    with torch.no_grad():
        want = gm(*xs)
    before = _targets(gm)
    gm = rewrite(gm)
    after = _targets(gm)
    if expect is None:
        assert after == before
    else:
        assert after != before
    with torch.no_grad():
        torch.testing.assert_close(gm(*xs), want, rtol=1e-5, atol=1e-5)


def test_the_patch_weight_is_the_convolutions_own():
    """The 1x1 convolution's weight holds the convolution's weights, each output channel's in one row: the same
    values, hence the same per-channel int8 quantization."""
    gm, _ = _graph(_conv_fn(8, 8), (1, 3, 32, 32))
    gm = patch_conv_to_pointwise(gm)
    conv = next(n for n in gm.graph.nodes if n.target == aten.conv2d.default)
    weight = getattr(gm, conv.args[1].target)
    original = _conv[(8, 8, 0, 3)].weight
    assert weight.shape == (5, 3 * 64, 1, 1)
    assert torch.equal(weight.flatten(1), original.flatten(1))
    assert torch.equal(weight.abs().amax((1, 2, 3)), original.abs().amax((1, 2, 3)))


def test_a_scalar_read_by_another_kind_of_op_is_reshaped_back():
    """The sum carried as [1] through the multiplication; the concatenation (no elementwise op) reads it as ()
    again, through a reshape; a scalar read by nothing elementwise is reshaped to () directly."""
    gm, xs = _graph(lambda _, x: torch.stack([x.sum() * 2.0, x.amax()]), (3, 4))
    with torch.no_grad():
        want = gm(*xs)
    gm = reduce_all_keepdim(gm)
    shapes = [tuple(n.meta["val"].shape) for n in gm.graph.nodes if n.target == aten.mul.Tensor]
    assert shapes == [(1,)]
    with torch.no_grad():
        torch.testing.assert_close(gm(*xs), want)


def test_the_split_limits_are_vela_s():
    from executorch_neutron.ethos_u.constraints import MEAN_REDUCED_AXIS_MAX, STRIDE_RANGE

    assert MEAN_AXIS_MAX == MEAN_REDUCED_AXIS_MAX and MAX_STRIDE == STRIDE_RANGE[1]

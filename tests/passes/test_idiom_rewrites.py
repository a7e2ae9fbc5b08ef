"""Common model idioms that used to stay on the CPU although the NPUs compute them exactly: `max(x, dim)` whose
indices nobody reads (amax), `x.max()` / `x.min()` (amax / amin to a scalar), repeat / tile / repeat_interleave /
expand_as (concatenations of copies), `*_like` constants (folded), narrow and constant-index gathers (slices and a
concatenation). Each rewritten graph equals eager PyTorch in float with the op gone, and each runs on imxrt700 and
imx93 in one partition within 1 output step of PyTorch's quantized model; what must stay is left alone."""

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.passes.pipeline import run_passes
from executorch_neutron.models.zoo import calibration
from harness import pte_steps

aten = torch.ops.aten


class ConvThen(nn.Module):
    """A 1x1 convolution (so the idiom reads an int8 activation), then the idiom."""

    def __init__(self, idiom):
        super().__init__()
        self.conv, self.idiom = nn.Conv2d(4, 4, 1), idiom

    def forward(self, x):
        return self.idiom(self.conv(x))


# name: (idiom, the ATen op it must remove)
CASES = {
    "max_dim_values": (lambda x: x.max(dim=1).values, aten.max.dim),
    "max_dim_keepdim": (lambda x: torch.max(x, 1, keepdim=True)[0], aten.max.dim),
    "min_dim": (lambda x: x.min(-1)[0], aten.min.dim),
    "repeat": (lambda x: x.repeat(1, 2, 1, 1), aten.repeat.default),
    "repeat_new_dim": (lambda x: x.repeat(2, 1, 1, 1, 1).sum(0), aten.repeat.default),
    "tile_short": (lambda x: x.tile((2, 1)), aten.tile.default),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=1), aten.repeat_interleave.self_int),
    "repeat_interleave_last": (lambda x: x.repeat_interleave(3, dim=-1), aten.repeat_interleave.self_int),
    "expand_as": (lambda x: x.mean(1, keepdim=True).expand_as(x) + x, aten.expand_as.default),
    "zeros_like": (lambda x: torch.zeros_like(x) + x, aten.zeros_like.default),
    "full_like": (lambda x: torch.full_like(x, 2.0) * x, aten.full_like.default),
    "narrow": (lambda x: x.narrow(3, 1, 4), aten.narrow.default),
    "index_runs": (lambda x: x[:, :, [0, 1, 2, 5, 7, 6]], aten.index.Tensor),
    "index_negative": (lambda x: x[:, [-1, 0]], aten.index.Tensor),
    "index_select": (lambda x: torch.index_select(x, 1, torch.tensor([3, 1])), aten.index_select.default),
}

SCALAR = {  # to a 0-d scalar: the reduction runs on the NPU, the reshape to () stays (a view on the CPU)
    "max_all": (lambda x: x.max(), aten.max.default),
    "min_all": (lambda x: x.min(), aten.min.default),
}


def _x():
    return (torch.randn(1, 4, 8, 8),)


@pytest.mark.fast
@pytest.mark.parametrize("name", [*CASES, *SCALAR])
def test_rewritten_graph_computes_what_pytorch_does(name):
    idiom, gone = {**CASES, **SCALAR}[name]
    torch.manual_seed(0)
    model, x = ConvThen(idiom).eval(), _x()
    gm = run_passes(torch.export.export(model, x, strict=False).module())
    assert gone not in [n.target for n in gm.graph.nodes]
    torch.testing.assert_close(gm(*x), model(*x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
@pytest.mark.parametrize("name", [*CASES, *SCALAR])
def test_idiom_runs_on_the_npu_within_one_step(name, target):
    idiom, _ = {**CASES, **SCALAR}[name]
    torch.manual_seed(0)
    x = _x()
    result = lower(ConvThen(idiom).eval(), x, [x] + calibration(x, 4), target=target)
    assert len(result.report.partitions) == 1, str(result.report)
    allowed = {"aten.view_copy.default"} if name in SCALAR else set()
    assert {r.op for r in result.report.rejections} <= allowed, str(result.report)
    assert pte_steps(result, [x]) <= 1


@pytest.mark.fast
@pytest.mark.parametrize("idiom, kept", [
    (lambda x: x.max(dim=1)[1].float(), aten.max.dim),  # the indices are read
    (lambda x: x.flatten(1)[:, x.flatten(1).argmax(1)], aten.index.Tensor),  # an index computed at run time
], ids=["max_dim_indices", "runtime_index"])
def test_what_needs_indices_is_left_alone(idiom, kept):
    model = ConvThen(idiom).eval()
    gm = run_passes(torch.export.export(model, _x(), strict=False).module())
    assert kept in [n.target for n in gm.graph.nodes]

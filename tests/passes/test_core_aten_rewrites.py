"""The passes that write what ExecuTorch cannot lower or run as written as Core ATen ops (adaptive max pools, a 1-D
adaptive average pool, median, round(decimals=), an in-place squeeze_, a rank-1 linear), each case through only the
passes it needs: they compute what PyTorch computes (checked against the eager module, bit for bit, in float); a
global and a dividing adaptive max pool lower onto the NPU within 1 step of PyTorch's quantized model; the case with
no kernel anywhere stops with one line that names it."""

import pytest
import torch
from torch import nn

from executorch_neutron.passes.adaptive_avg_pool1d_to_2d import adaptive_avg_pool1d_to_2d
from executorch_neutron.passes.adaptive_max_pool_decompose import adaptive_max_pool_decompose
from executorch_neutron.passes.inplace_view_to_functional import inplace_view_to_functional
from executorch_neutron.passes.linear_rank1_to_rank2 import linear_rank1_to_rank2
from executorch_neutron.passes.median_to_topk import median_to_topk
from executorch_neutron.passes.round_decimals_decompose import round_decimals_decompose
from harness import assert_within_steps, lower_and_run


class _Median(nn.Module):
    def __init__(self, dim=None, keepdim=False):
        super().__init__()
        self.dim, self.keepdim = dim, keepdim

    def forward(self, x):
        return torch.median(x) if self.dim is None else torch.median(x, self.dim, self.keepdim)


class _Round(nn.Module):
    def __init__(self, decimals):
        super().__init__()
        self.decimals = decimals

    def forward(self, x):
        return torch.round(x, decimals=self.decimals)


class _SqueezeInPlace(nn.Module):
    """As PyTorch's quantizable LSTM treats its initial state: a fresh tensor squeezed in place, then read."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.zeros(1, 8)
        h.squeeze_(0)
        return self.linear(h) + self.linear(x)


AMP, AAP, MEDIAN = (adaptive_max_pool_decompose,), (adaptive_avg_pool1d_to_2d,), (median_to_topk,)
CASES = {  # name -> (module, input shape, the passes it needs)
    "amp1d_divides": (nn.AdaptiveMaxPool1d(5), (1, 8, 100), AMP),
    "amp1d_global_indices": (nn.AdaptiveMaxPool1d(1, return_indices=True), (2, 8, 100), AMP),
    "amp1d_uneven": (nn.AdaptiveMaxPool1d(7), (1, 8, 100), AMP),
    "amp2d_divides_indices": (nn.AdaptiveMaxPool2d((5, 10), return_indices=True), (1, 8, 20, 20), AMP),
    "amp2d_global": (nn.AdaptiveMaxPool2d(1), (1, 8, 20, 20), AMP),
    "amp2d_uneven": (nn.AdaptiveMaxPool2d((3, 7)), (2, 4, 10, 11), AMP),
    "amp3d_divides": (nn.AdaptiveMaxPool3d((4, 4, 4)), (1, 4, 8, 8, 8), AMP),
    "amp3d_divides_indices": (nn.AdaptiveMaxPool3d((4, 2, 8), return_indices=True), (2, 3, 8, 8, 8), AMP),
    "amp3d_uneven": (nn.AdaptiveMaxPool3d((2, 4, 6)), (1, 4, 8, 8, 8), AMP),
    "aap1d_divides": (nn.AdaptiveAvgPool1d(5), (1, 8, 100), AAP),
    "aap1d_uneven": (nn.AdaptiveAvgPool1d(7), (2, 8, 100), AAP),
    "median_all": (_Median(), (10, 10), MEDIAN),
    "median_all_rank1": (_Median(), (20,), MEDIAN),
    "median_dim": (_Median(1), (2, 3, 4, 5), MEDIAN),
    "median_dim_keepdim": (_Median(-1, True), (3, 4, 5), MEDIAN),
    "round_2": (_Round(2), (10, 10), (round_decimals_decompose,)),
    "round_minus_1": (_Round(-1), (10, 10), (round_decimals_decompose,)),
    "linear_rank1": (nn.Linear(16, 5), (16,), (linear_rank1_to_rank2,)),
    "squeeze_in_place_then_linear": (_SqueezeInPlace(), (8,), (inplace_view_to_functional, linear_rank1_to_rank2)),
}


@pytest.mark.fast
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_rewrite_computes_what_pytorch_computes(case):
    module, shape, passes = case
    torch.manual_seed(0)
    x = torch.randn(shape) * 10
    gm = torch.export.export(module.eval(), (x,)).module()
    for rewrite in passes:
        gm = rewrite(gm)
    ops = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not {o for o in ops if any(k in o for k in ("adaptive_max", "pool1d", "median", "round.decimals"))}, ops
    assert not {o for o in ops if o.endswith("squeeze_.dim")}, ops
    if isinstance(module, (nn.Linear, _SqueezeInPlace)):  # the linear now reads a rank-2 input
        assert all(n.args[0].meta["val"].dim() == 2 for n in gm.graph.nodes if n.target == torch.ops.aten.linear.default)
    want, got = module(x), gm(x)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert w.shape == g.shape and torch.equal(w, g)


@pytest.mark.fast
def test_pool_with_indices_and_no_kernel_stops_with_one_line():
    module = nn.AdaptiveMaxPool3d((3, 4, 4), return_indices=True)
    gm = torch.export.export(module, (torch.randn(1, 2, 8, 8, 8),)).module()
    with pytest.raises(NotImplementedError, match="adaptive_max_pool3d with return_indices=True .* no kernel") as err:
        adaptive_max_pool_decompose(gm)
    assert "\n" not in str(err.value) and "return_indices=False" in str(err.value)


@pytest.mark.parametrize("output_size", [1, (5, 5)], ids=["global", "divides"])
def test_adaptive_max_pool_runs_on_the_npu(output_size):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.AdaptiveMaxPool2d(output_size)).eval()
    r = lower_and_run(model, (torch.randn(1, 4, 20, 20),))
    assert not r.rejections, r.result.report
    assert "aten.max_pool2d_with_indices.default" in r.delegated_ops or "aten.max_pool2d.default" in r.delegated_ops
    assert_within_steps(r.output, r.reference, 1, r.output_scale)


def test_global_adaptive_max_pool_is_within_vela_stride_range():
    """A global pool's window is the whole input: stride 1 on that axis, inside Vela's max-pool stride range
    [1, 3] (stride = input put a global max pool over 98 samples on the CPU on imx93). The .pte runs on the host
    runtime against PyTorch's quantized model."""
    from executorch_neutron import lower
    from executorch_neutron.runtime import run
    from harness import model_output_qparams, quantize_np

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(4, 8, 3), nn.AdaptiveMaxPool1d(1)).eval()
    x = (torch.randn(1, 4, 100),)
    result = lower(model, x, [x] + [(torch.randn(1, 4, 100),) for _ in range(4)], target="imx93")
    assert len(result.report.partitions) == 1 and not result.report.rejections, result.report
    (scale, zp), = model_output_qparams(result.quantized_model)
    with torch.no_grad():
        ref = quantize_np(result.quantized_model(*x).numpy(), scale, zp)
    out = quantize_np(run(result.pte, x)[0].numpy(), scale, zp)
    assert_within_steps(out, ref, 1, scale)

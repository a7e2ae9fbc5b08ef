"""passes/pool3d_to_pool2d.py: a 3-D max pool written as two 2-D max pools, and a 3-D average / adaptive average
pool written as one 2-D convolution, compute the same as PyTorch's 3-D pool in float (eager PyTorch is the
reference), over padding, ceil_mode, dilation, count_include_pad, batched and unbatched inputs; the averages whose
divisor is not the window size everywhere are left alone."""

import pytest
import torch
from torch import nn

from executorch_neutron.passes.pool3d_to_pool2d import pool3d_to_pool2d

pytestmark = pytest.mark.fast

POOLS = {
    "max_k2": lambda: nn.MaxPool3d(2),
    "max_pad_stride": lambda: nn.MaxPool3d(3, 2, 1),
    "max_dilated_ceil": lambda: nn.MaxPool3d((2, 3, 2), (1, 2, 1), (1, 1, 0), dilation=(1, 2, 1), ceil_mode=True),
    "avg_k2": lambda: nn.AvgPool3d(2),
    "avg_pad": lambda: nn.AvgPool3d(3, 2, 1),
    "avg_strides": lambda: nn.AvgPool3d((3, 2, 3), (1, 2, 2), (1, 0, 1)),
    "avg_exclusive_unpadded": lambda: nn.AvgPool3d(2, 1, count_include_pad=False),
    "adaptive_dividing": lambda: nn.AdaptiveAvgPool3d((1, 2, 2)),
    "adaptive_none": lambda: nn.AdaptiveAvgPool3d((None, 2, 2)),
}
SHAPES = {"n1": (1, 2, 5, 8, 6), "n2": (2, 3, 6, 8, 4), "unbatched": (3, 5, 4, 6)}


def _ops(gm):
    return {str(n.target) for n in gm.graph.nodes
            if n.op == "call_function" and ("pool" in str(n.target) or "conv" in str(n.target))}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("make", POOLS.values(), ids=POOLS.keys())
def test_two_2d_pools_compute_the_3d_pool(make, shape):
    torch.manual_seed(0)
    model, x = make(), torch.randn(*shape)
    gm = pool3d_to_pool2d(torch.export.export(model, (x,)).module())
    assert _ops(gm) and not any("3d" in op for op in _ops(gm)), _ops(gm)
    torch.testing.assert_close(gm(x), model(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("model, op", [(nn.AvgPool3d(2, divisor_override=3), "aten.avg_pool3d.default"),
                                       (nn.AvgPool3d(3, 2, 1, count_include_pad=False), "aten.avg_pool3d.default"),
                                       (nn.AvgPool3d(3, 2, 1, ceil_mode=True), "aten.avg_pool3d.default"),
                                       (nn.AdaptiveAvgPool3d((3, 4, 4)), "aten.adaptive_avg_pool3d.default")],
                         ids=["divisor_override", "exclusive_padded", "ceil_overhang", "adaptive_overlapping"])
def test_not_rewritten(model, op):
    x = torch.randn(1, 2, 4, 6, 4)
    assert _ops(pool3d_to_pool2d(torch.export.export(model, (x,)).module())) == {op}

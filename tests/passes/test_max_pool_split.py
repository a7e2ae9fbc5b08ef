"""max_pool_split: on Ethos-U targets a tiling max pool with a stride above Vela's 3 becomes a chain of stride-2/3
pools (and a max over runs of p elements for a prime factor p above 3); the .pte runs on the host runtime against
PyTorch's quantized model (max pools do not requantize: exact)."""

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.runtime import run
from harness import assert_within_steps, model_output_qparams, quantize_np


def _pools(result) -> list[tuple]:
    return [(tuple(n.args[1]), tuple(n.args[2])) for n in result.quantized_model.graph.nodes
            if n.target == torch.ops.aten.max_pool2d.default]


@pytest.mark.parametrize("pool, shape, chain", [
    (nn.MaxPool2d(4), (1, 8, 20, 20), [((2, 2), (2, 2)), ((2, 2), (2, 2))]),
    (nn.AdaptiveMaxPool2d((5, 10)), (1, 8, 20, 20), [((2, 2), (2, 2)), ((2, 1), (2, 1))]),
    (nn.MaxPool2d((6, 3)), (1, 4, 12, 9), [((3, 3), (3, 3)), ((2, 1), (2, 1))]),
    (nn.AdaptiveMaxPool1d(5), (1, 8, 40), [((1, 2), (1, 2)), ((1, 2), (1, 2)), ((1, 2), (1, 2))]),
    # a prime factor above 3: a max over runs of p elements, on a one-image view pooled with stride 1
    (nn.MaxPool2d(5), (1, 4, 20, 20), [((5, 1), (1, 1)), ((1, 5), (1, 1))]),
    (nn.MaxPool2d((3, 5)), (2, 4, 20, 20), [((3, 1), (3, 1)), ((1, 5), (1, 1))]),
    (nn.AdaptiveMaxPool1d(4), (1, 8, 80), [((1, 2), (1, 2)), ((1, 2), (1, 2)), ((1, 5), (1, 1))]),
    (nn.MaxPool2d(7), (1, 4, 20, 16), [((7, 1), (1, 1)), ((1, 7), (1, 1))]),  # remainders dropped, as PyTorch does
], ids=["4x4", "adaptive-20-to-5x10", "6x3", "adaptive1d-40-to-5", "5x5", "3x5-batch2", "adaptive1d-80-to-4",
        "7x7-remainders"])
def test_a_tiling_max_pool_with_a_large_stride_runs_on_ethos_u(pool, shape, chain):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(shape[1], 8, 1) if len(shape) == 4 else nn.Conv1d(shape[1], 8, 1), pool).eval()
    x = (torch.randn(*shape),)
    result = lower(model, x, [x] + [(torch.randn(*shape),) for _ in range(4)], target="imx93")
    assert len(result.report.partitions) == 1 and not result.report.rejections, result.report
    assert _pools(result) == chain
    (scale, zp), = model_output_qparams(result.quantized_model)
    with torch.no_grad():
        ref = quantize_np(model(*x).numpy(), scale, zp)  # the float model: a chain of maxima is the same maximum
    out = quantize_np(run(result.pte, x)[0].numpy(), scale, zp)
    assert_within_steps(out, ref, 1, scale)


def test_neutron_keeps_one_pool():
    torch.manual_seed(0)
    x = (torch.randn(1, 4, 20, 20),)
    for pool in (nn.MaxPool2d(4), nn.MaxPool2d(5)):
        neutron = lower(nn.Sequential(nn.Conv2d(4, 4, 1), pool).eval(), x, [x], target="imxrt700")
        assert _pools(neutron) == [((pool.kernel_size,) * 2, (pool.kernel_size,) * 2)]

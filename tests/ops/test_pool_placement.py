"""Any placement of a 2D pool lowers: on the model input (where the max-pool padding rewrite replicates edges of a
tensor with no quantized producer: this crashed prepare_pt2e with a RecursionError), after a conv, after a relu
(pad with the zero point), after an add. Each pool is delegated and the .pte, run on the host, is within 1 output
step of PyTorch's quantized model, or stays on the CPU with a reason naming it."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness import Fn, model_output_qparams, quantize_np, steps
from executorch_neutron import lower
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration

POOLS = {
    "max_k3_s2_p1": lambda t: F.max_pool2d(t, 3, 2, padding=1),
    "max_k3_s2_p1_ceil": lambda t: F.max_pool2d(t, 3, 2, padding=1, ceil_mode=True),
    "max_k2_s2_ceil": lambda t: F.max_pool2d(t, 2, 2, ceil_mode=True),
    "max_k3_s1_p1": lambda t: F.max_pool2d(t, 3, 1, padding=1),
    "avg_k3_s2_p1_exclude_pad": lambda t: F.avg_pool2d(t, 3, 2, padding=1, count_include_pad=False),
    "avg_k2_s2_ceil": lambda t: F.avg_pool2d(t, 2, 2, ceil_mode=True),
}

# name: (model factory for a pool function, input shapes): even and odd sizes, 3 and 16 channels
PLACEMENTS = {
    "input_3x32x32": (lambda pool: Fn(lambda s, a: pool(a)), [(1, 3, 32, 32)]),
    "input_16x10x14": (lambda pool: Fn(lambda s, a: pool(a)), [(1, 16, 10, 14)]),
    "after_conv": (lambda pool: Fn(lambda s, a: pool(s.mods[0](a)), nn.Conv2d(3, 8, 3, padding=1)), [(1, 3, 12, 9)]),
    "after_relu": (lambda pool: Fn(lambda s, a: pool(torch.relu(a))), [(1, 8, 11, 8)]),
    "after_add": (lambda pool: Fn(lambda s, a, b: pool(a + b)), [(1, 8, 8, 13), (1, 8, 8, 13)]),
}


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("pool", POOLS)
def test_pool_lowers_anywhere(pool, placement):
    make, shapes = PLACEMENTS[placement]
    g = torch.Generator().manual_seed(0)
    inputs = tuple(torch.randn(*s, generator=g) for s in shapes)
    torch.manual_seed(0)
    model = make(POOLS[pool]).eval()
    r = lower(model, inputs, [inputs] + calibration(inputs, 4))
    pool_ops = {"aten.max_pool2d_with_indices.default", "aten.avg_pool2d.default"}
    delegated = pool_ops & set(r.report.delegated_ops)
    refused = [j for j in r.report.rejections if j.op in pool_ops]
    assert delegated or (refused and refused[0].reason), str(r.report)
    out = run(r.pte, list(inputs))[0]
    with torch.no_grad():
        ref = r.quantized_model(*inputs)
    scale, zp = model_output_qparams(r.quantized_model)[0]
    worst = steps(quantize_np(out.numpy(), scale, zp), quantize_np(ref.numpy(), scale, zp)).max()
    assert worst <= 1, f"{worst} output steps from PyTorch's quantized model\n{r.report}"
    assert np.isfinite(out.numpy()).all()

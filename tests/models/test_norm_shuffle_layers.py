"""GroupNorm, PixelShuffle / PixelUnshuffle and F.normalize on the NPU (passes/group_norm_decompose.py,
pixel_shuffle_to_permute.py, l2_normalize_decompose.py), on Neutron (imxrt700) and Ethos-U (imx93).

References: the float layer for each rewrite (the rewritten graph must compute the same function), PyTorch's
quantized model (convert_pt2e) for the .pte run on ExecuTorch's runtime with the host back ends.

Bounds (output steps vs PyTorch's quantized model). Pixel (un)shuffle alone moves int8 values with the input's
quantization: 0 steps; behind a convolution, the convolution's own step: 1. GroupNorm: 3, as layer norm in
tests/models/test_transformers.py (it is layer norm's pieces per group): LiteRT's int8 RSQRT and PyTorch's float
rsqrt + rounding may differ by one step of the per-group factor 1/sqrt(var + eps), which moves every value of the
group by |x - mean| * s_factor / s_out steps (up to about 2 here), before the last op's own step; followed by SiLU
(slope at most 1.1, plus its own step): 4. F.normalize: the same one-step difference of the per-row factor
rsqrt(sum(x^2)) times |x| / s_out, at most 1 step here, plus the product's own step: 2.
"""

import pytest
import torch

from executorch_neutron import lower
from executorch_neutron.passes.fold_constants import fold_constants
from executorch_neutron.passes.group_norm_decompose import group_norm_decompose
from executorch_neutron.passes.l2_normalize_decompose import l2_normalize_decompose
from executorch_neutron.passes.pixel_shuffle_to_permute import pixel_shuffle_to_permute
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration
from harness import pte_steps
from models.norm_shuffle_blocks import LAYERS

aten = torch.ops.aten


_GN, _SHUFFLE, _UNSHUFFLE, _NORM = (aten.group_norm.default, aten.pixel_shuffle.default, aten.pixel_unshuffle.default,
                                   aten.linalg_vector_norm.default)
# name -> (the ATen op the rewrite removes, max output steps)
CASES = {
    "group_norm": (_GN, 3), "group_norm_rank3": (_GN, 3), "group_norm_no_affine": (_GN, 3),
    "conv_group_norm_silu": (_GN, 4),
    "pixel_shuffle": (_SHUFFLE, 0), "pixel_shuffle_r3": (_SHUFFLE, 0), "pixel_unshuffle": (_UNSHUFFLE, 0),
    "conv_pixel_shuffle": (_SHUFFLE, 1),
    "normalize_embedding": (_NORM, 2), "normalize_channels": (_NORM, 2), "divide_by_norm": (_NORM, 2),
}
REWRITES = (fold_constants, pixel_shuffle_to_permute, group_norm_decompose, l2_normalize_decompose)


@pytest.mark.fast
def test_every_layer_has_a_case():
    assert set(CASES) == set(LAYERS)


@pytest.mark.fast
@pytest.mark.parametrize("name", CASES)
def test_rewrite_computes_the_layer(name):
    op, _ = CASES[name]
    module, inputs = LAYERS[name]()
    gm = torch.export.export(module, inputs, strict=False).module()
    for rewrite in REWRITES:
        gm = rewrite(gm)
    assert not any(n.target == op for n in gm.graph.nodes), gm.graph
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs), module(*inputs), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
@pytest.mark.parametrize("name", CASES)
def test_layer_on_the_npu(name, target):
    _, bound = CASES[name]
    module, inputs = LAYERS[name]()
    calib = [inputs] + calibration(inputs, 6)
    result = lower(module, inputs, calib, target=target)
    report = result.report
    assert len(report.partitions) == 1 and report.rejections == [], str(report)
    worst = pte_steps(result, calib[:4])
    print(f"{name} on {target}: max {worst} steps")
    assert worst <= bound, f"max {worst} steps > {bound}"


@pytest.mark.parametrize("name", ["group_norm", "normalize_channels"])
def test_without_rsqrt_the_layer_stays_float_on_the_cpu(name):
    """Neutron's documented table has no rsqrt: the layer is not rewritten, stays one float computation on the
    CPU (with a reason in the report), and the .pte computes it as PyTorch does."""
    module, inputs = LAYERS[name]()
    result = lower(module, inputs, [inputs], constraints="documented")
    assert not result.report.partitions and result.report.rejections, str(result.report)
    assert all(r.reason for r in result.report.rejections)
    with torch.no_grad():
        torch.testing.assert_close(run(result.pte, inputs)[0], module(*inputs), atol=1e-5, rtol=1e-5)

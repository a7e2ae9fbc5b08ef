"""batch_split: on Ethos-U targets a resize or a spatial mean over a batch of N > 1 runs on one image of N * C
channels, a mean over a run of other dims on a one-image view (Vela runs MEAN and RESIZE at batch 1 only). The .pte runs on the host runtime against PyTorch's quantized
model of the same module without the rewrite (the Neutron flow's, which leaves these ops alone), within 1 step."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron import lower
from executorch_neutron.runtime import run
from harness import Fn, assert_within_steps, model_output_qparams, quantize_np

aten = torch.ops.aten

CASES = {
    "bilinear_2x": (lambda: Fn(lambda s, a: F.interpolate(a, scale_factor=2.0, mode="bilinear")), (2, 3, 5, 5)),
    "nearest_2x": (lambda: Fn(lambda s, a: F.interpolate(a, scale_factor=2.0, mode="nearest")), (4, 3, 4, 6)),
    "mean_hw_keepdim": (lambda: Fn(lambda s, a: a.mean(dim=(2, 3), keepdim=True)), (3, 4, 6, 6)),
    "mean_w": (lambda: Fn(lambda s, a: a.mean(dim=-1)), (2, 4, 5, 6)),
    "global_avg_pool": (lambda: nn.AdaptiveAvgPool2d(1), (2, 8, 10, 9)),
    "mean_channels_keepdim": (lambda: Fn(lambda s, a: a.mean(dim=1, keepdim=True)), (2, 8, 5, 5)),
    "mean_c_h": (lambda: Fn(lambda s, a: a.mean(dim=(1, 2))), (3, 4, 5, 6)),
}


def _samples(shape, n=4):
    return [(torch.randn(*shape),) for _ in range(n)]


@pytest.mark.parametrize("name", CASES)
def test_a_batch_runs_on_ethos_u_as_pytorch_computes_it(name):
    make, shape = CASES[name]
    torch.manual_seed(0)
    model = make().eval()
    x = (torch.randn(*shape),)
    calib = [x] + _samples(shape)
    result = lower(model, x, calib, target="imx93")
    assert len(result.report.partitions) == 1 and not result.report.rejections, result.report
    # PyTorch's quantized model of the module as written (the Neutron flow does not rewrite it): same calibration
    reference = lower(model, x, calib, target="imxrt700").quantized_model
    assert not any(n.target == aten.view.default for n in reference.graph.nodes)
    (scale, zp), = model_output_qparams(result.quantized_model)
    assert (scale, zp) == model_output_qparams(reference)[0]
    with torch.no_grad():
        ref = quantize_np(reference(*x).numpy(), scale, zp)
    out = quantize_np(run(result.pte, x)[0].numpy(), scale, zp)
    assert_within_steps(out, ref, 1, scale)


@pytest.mark.parametrize("make, shape", [
    (lambda: Fn(lambda s, a: a.mean(dim=(0, 2, 3))), (2, 8, 5, 5)),  # over the batch
    (lambda: Fn(lambda s, a: a.mean(dim=(1, 3))), (2, 8, 5, 5)),  # over dims that are no run: no one-image view
], ids=["mean_batch", "mean_c_w"])
def test_a_mean_across_planes_stays_with_vela_reason(make, shape):
    torch.manual_seed(0)
    x = (torch.randn(*shape),)
    result = lower(make().eval(), x, [x] + _samples(shape), target="imx93")
    assert any("Batch must be 1" in r.reason for r in result.report.rejections), result.report

"""Constraint profiles: `sdk-current` (default, what NXP's current SDK delegates) vs `documented` (NXP's table).

Each case is lowered under both profiles: under sdk-current it is delegated and its partition TFLite in LiteRT is
within 1 output step of PyTorch's quantized model; under documented the node stays on the CPU with the reason of
the documented constraint it fails.
"""

import pytest
import torch
from torch import nn

from harness import Fn, assert_within_steps, lower_and_run
from executorch_neutron import lower
from executorch_neutron.models.zoo import calibration


def f(fn, *mods):
    return lambda: Fn(fn, *mods)


# name: (model factory, input shapes, delegated op under sdk-current, reason fragment under documented)
CASES = {
    "softmax_10_classes": (lambda: nn.Sequential(nn.Linear(24, 10), nn.Softmax(-1)), [(1, 24)],
                           "aten._softmax.default", "channels"),
    "sub": (f(lambda s, a, b: a - b), [(1, 8, 5, 6), (1, 8, 5, 6)], "aten.sub.Tensor", "documented operator table"),
    "mean_over_channels": (f(lambda s, a: torch.relu(s.mods[0](a)).mean(1, keepdim=True), nn.Conv2d(3, 8, 1)),
                           [(1, 3, 5, 6)], "aten.mean.dim", "dims"),
    "clamp_any_bounds": (f(lambda s, a: torch.clamp(s.mods[0](a), -0.5, 1.5), nn.Conv2d(3, 8, 1)),
                         [(1, 3, 5, 6)], "aten.clamp.default", "bounds"),
    "maxpool_12_channels": (f(lambda s, a: nn.functional.max_pool2d(s.mods[0](a), 2), nn.Conv2d(3, 12, 1)),
                            [(1, 3, 6, 8)], "aten.max_pool2d_with_indices.default", "channels"),
    "mul_size_not_multiple": (f(lambda s, a, b: a * b), [(1, 3, 5, 3), (1, 3, 5, 3)], "aten.mul.Tensor", "size"),
    "bmm_dims_not_multiple": (f(lambda s, a, b: torch.bmm(a, b)), [(2, 5, 12), (2, 12, 7)], "aten.bmm.default",
                              "self shape [2, 5, 12]: width and channel dims of both arguments % 8 == 0"),
}


def _inputs(shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*s, generator=g) for s in shapes)


@pytest.mark.parametrize("name", CASES)
def test_sdk_current_delegates_within_one_step(name):
    make, shapes, op, _ = CASES[name]
    r = lower_and_run(make().eval(), _inputs(shapes))
    assert r.delegated_ops.get(op, 0) >= 1, r.result.report
    assert not r.rejections, [x.message() for x in r.rejections]
    for out, ref, scale in zip(r.outputs, r.references, r.output_scales):
        assert_within_steps(out, ref, 1, scale)


@pytest.mark.parametrize("name", CASES)
def test_documented_profile_keeps_the_node_on_the_cpu_with_its_reason(name):
    make, shapes, op, fragment = CASES[name]
    inputs = _inputs(shapes)
    result = lower(make().eval(), inputs, [inputs] + calibration(inputs, 4), constraints="documented")
    rejected = [r for r in result.report.rejections if r.op == op]
    assert rejected, result.report
    assert fragment in rejected[0].reason, rejected[0].message()
    assert "documented" in str(result.report) or fragment in str(result.report)


def test_issue_example_conv_hardtanh_runs_on_the_npu():
    """nn.Hardtanh(-0.5, 1.5) after a conv: the quantizer no longer fuses bounds the converter cannot fuse, so the
    conv stays on the NPU under both profiles (before: 0 of 2 compute nodes delegated)."""
    model = nn.Sequential(nn.Conv2d(8, 8, 1), nn.Hardtanh(-0.5, 1.5)).eval()
    inputs = _inputs([(1, 8, 6, 5)])
    r = lower_and_run(model, inputs)
    assert r.delegated_ops == {"aten.convolution.default": 1, "aten.hardtanh.default": 1}
    assert_within_steps(r.output, r.reference, 1, r.output_scale)
    documented = lower(model, inputs, [inputs] + calibration(inputs, 4), constraints="documented")
    assert documented.report.delegated_ops == {"aten.convolution.default": 1}
    assert [x.op for x in documented.report.rejections] == ["aten.hardtanh.default"]


def test_unknown_profile_is_an_error():
    from executorch_neutron import NeutronCompileSpec

    with pytest.raises(ValueError, match="documented, sdk-current"):
        NeutronCompileSpec(constraints="newest")

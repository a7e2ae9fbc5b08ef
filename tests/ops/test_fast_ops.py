"""The fast operator table: a handful of operators converted at the converter level (edge program -> TFLite ->
LiteRT, no `lower()`, no payload, no .pte: `harness.convert_and_run`), each within 1 output quantization step of
PyTorch's quantized model; and one smoke `lower()` whose .pte runs on the host runtime. The edit-test loop runs
these (`make test-fast`); the full per-operator tables (test_table_ops.py, test_foundation_ops.py) run each case
through the whole `lower()`."""

import pytest
import torch
from torch import nn

from harness import Fn, assert_within_steps, compare_pte, convert_and_run, lower_and_run

pytestmark = pytest.mark.fast


def x(*shape):
    return (torch.randn(*shape),)


# name: (model factory, inputs, edge ops the partitioner delegates); distinct N, C, H, W extents
CASES = {
    "conv2d_relu": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()), x(1, 3, 9, 7),
                    {"aten.convolution.default": 1, "aten.relu.default": 1}),
    "depthwise_conv2d": (lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8), x(1, 8, 6, 5),
                         {"aten.convolution.default": 1}),
    "linear": (lambda: nn.Linear(24, 16), x(3, 24), {"aten.linear.default": 1}),
    "add": (lambda: Fn(lambda s, a, b: a + b), x(1, 8, 5, 6) + x(1, 8, 5, 6), {"aten.add.Tensor": 1}),
    "mul": (lambda: Fn(lambda s, a, b: a * b), x(2, 16) + x(2, 16), {"aten.mul.Tensor": 1}),
    "max_pool2d": (lambda: nn.MaxPool2d(2), x(1, 8, 10, 6), {"aten.max_pool2d_with_indices.default": 1}),
    "avg_pool2d": (lambda: nn.AvgPool2d(2), x(1, 8, 10, 6), {"aten.avg_pool2d.default": 1}),
    "softmax": (lambda: nn.Softmax(-1), x(2, 16), {"aten._softmax.default": 1}),
    "sigmoid": (lambda: nn.Sigmoid(), x(1, 8, 5, 6), {"aten.sigmoid.default": 1}),
    "cat": (lambda: Fn(lambda s, a, b: torch.cat([torch.relu(a), torch.relu(b)], 1)), x(1, 8, 5, 6) + x(1, 16, 5, 6),
            {"aten.relu.default": 2, "aten.cat.default": 1}),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_operator_converted(case):
    make, inputs, ops = case
    torch.manual_seed(0)
    r = convert_and_run(make(), inputs)
    assert not r.rejections, [rej.message() for rej in r.rejections]
    assert r.delegated_ops == ops
    for out, ref, scale in zip(r.outputs, r.references, r.output_scales):
        assert_within_steps(out, ref, steps_allowed=1, scale=scale)


def test_smoke_lower_and_host_run():
    """The whole flow once: quantize, partition, convert, pack, .pte, and the .pte on ExecuTorch's runtime with the
    host backend, within 1 output step of PyTorch's quantized model on two samples."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AvgPool2d(2)).eval()
    inputs = x(1, 3, 10, 8)
    r = lower_and_run(model, inputs)
    assert r.delegated_ops == {"aten.convolution.default": 1, "aten.relu.default": 1, "aten.avg_pool2d.default": 1}
    assert_within_steps(r.output, r.reference, steps_allowed=1, scale=r.output_scale)
    on_host = compare_pte(r, model, [inputs, x(1, 3, 10, 8)])
    assert int(on_host.steps.max()) <= 1, f"the .pte on the host is {int(on_host.steps.max())} steps off"

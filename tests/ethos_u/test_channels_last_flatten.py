"""A flatten of a channels-last feature map read only by linear layers costs no TRANSPOSE: the partition reshapes
the NHWC map as it lies and the linear layer takes its weight columns in that order (both back ends; it closes
the gap to TensorFlow's TFLite in docs/ethos_u_vs_tflite.md). A flatten that anything else reads keeps the
TRANSPOSE. References: LiteRT's interpreter for the operators of the partition TFLite, PyTorch's quantized model
(convert_pt2e) for the numbers and, per op, `executorch_neutron.compare` (which reads the flatten back).
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import executorch_neutron
from executorch_neutron import lower
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration
from harness import assert_within_steps, model_output_qparams, quantize_np


class Head(nn.Module):
    """conv 3->8, ReLU, 2x2 max pool, flatten, linear (C, H, W = 8, 4, 3 all differ); `also_return` returns the
    flattened map too (a reader that is not a linear layer)."""

    def __init__(self, also_return: bool = False):
        super().__init__()
        self.conv, self.fc, self.also_return = nn.Conv2d(3, 8, 3, padding=1), nn.Linear(8 * 4 * 3, 10), also_return

    def forward(self, x):
        flat = torch.flatten(nn.functional.max_pool2d(torch.relu(self.conv(x)), 2), 1)
        return (self.fc(flat), flat) if self.also_return else self.fc(flat)


def _transposes(tflite: bytes) -> tuple[int, int]:
    """(TRANSPOSE ops reading a graph input, all TRANSPOSE ops), as LiteRT lists them."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=tflite)
    inputs = {d["index"] for d in it.get_input_details()}
    ops = [op for op in it._get_ops_details() if op["op_name"] == "TRANSPOSE"]  # noqa: SLF001
    return sum(bool(inputs & set(op["inputs"])) for op in ops), len(ops)


def _channels_last(batch: tuple) -> tuple:
    return tuple(x.to(memory_format=torch.channels_last) for x in batch)


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("target", ["imxrt700", "ethos-u55-128"])
def test_flatten_into_linear_needs_no_transpose(target, channels_last, tmp_path):
    torch.manual_seed(0)
    model, inputs = Head().eval(), (torch.randn(1, 3, 8, 6),)
    calib = [inputs] + calibration(inputs, 4)
    if channels_last:
        model = copy.deepcopy(model).to(memory_format=torch.channels_last)
        inputs, calib = _channels_last(inputs), [_channels_last(s) for s in calib]
    options = {"transpose_form": "4d"} if target.startswith("ethos-u") else {}  # the input's one rank-4 TRANSPOSE
    result = lower(model, inputs, calib, target=target, intermediates_dir=tmp_path, **options)
    (part,) = result.report.partitions
    at_input, total = _transposes((tmp_path / f"{part.tag}.tflite").read_bytes())
    assert total == at_input == (0 if channels_last else 1)  # only the contiguous input's own conversion
    with torch.no_grad():
        ref = result.quantized_model(*inputs).numpy()
    scale, zp = model_output_qparams(result.quantized_model)[0]
    assert_within_steps(quantize_np(run(result.pte, inputs)[0].numpy(), scale, zp), quantize_np(ref, scale, zp), 1,
                        scale)


def test_compare_reads_the_flatten_back_in_pytorch_order():
    torch.manual_seed(0)
    model, inputs = Head().eval(), (torch.randn(1, 3, 8, 6),)
    (p,) = executorch_neutron.compare(model, inputs, [inputs] + calibration(inputs, 4)).partitions
    assert "RESHAPE" in [o.op for o in p.ops] and all(o.max_steps <= 1 for o in p.ops), p.ops


def test_a_flatten_read_by_more_than_linears_keeps_its_transpose(tmp_path):
    torch.manual_seed(0)
    model, inputs = Head(also_return=True).eval(), (torch.randn(1, 3, 8, 6),)
    result = lower(model, inputs, [inputs] + calibration(inputs, 4), target="imxrt700", intermediates_dir=tmp_path)
    (part,) = result.report.partitions
    assert _transposes((tmp_path / f"{part.tag}.tflite").read_bytes()) == (1, 2)
    host = run(result.pte, inputs)
    with torch.no_grad():
        refs = result.quantized_model(*inputs)
    for got, ref, (scale, zp) in zip(host, refs, model_output_qparams(result.quantized_model)):
        assert_within_steps(quantize_np(got.numpy(), scale, zp), quantize_np(ref.numpy(), scale, zp), 1, scale)

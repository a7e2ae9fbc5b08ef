"""Channels-last I/O pays no format tax: a model kept channels-last (`model.to(memory_format=torch.channels_last)`
with channels-last example inputs, as ExecuTorch recommends) lowers into the partitions of the contiguous model,
with no TRANSPOSE in any partition TFLite, on both back ends; the host runtime takes and returns channels-last
tensors, and the numbers equal the contiguous model's.

References: LiteRT's interpreter lists the partition TFLite's operators (not our reader), PyTorch's quantized
model (convert_pt2e) gives the numbers, the contiguous model's .pte the bit-exact comparison.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.loading import load_model
from executorch_neutron.runtime import run
from executorch_neutron.zoo import calibration
from harness import assert_within_steps, model_output_qparams, quantize_np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _segmenter():
    """4-D in and out: conv 3->8 3x3, ReLU, conv 8->5 1x1 on an 11x7 image (every extent differs)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 5, 1)).eval()
    return model, (torch.randn(1, 3, 11, 7),)


CASES = {
    "segmenter": _segmenter,
    "vww_mobilenet": lambda: load_model(f"{EXAMPLES}/vww_mobilenet.py:factory")[:2],  # global pool + classifier
}


def _channels_last(model, inputs):
    model = copy.deepcopy(model).to(memory_format=torch.channels_last)  # Module.to works in place: copy first
    return model, tuple(x.to(memory_format=torch.channels_last) for x in inputs)


def _litert_ops(tflite: bytes) -> list[str]:
    from ai_edge_litert.interpreter import Interpreter

    return [op["op_name"] for op in Interpreter(model_content=tflite)._get_ops_details()]  # noqa: SLF001


@pytest.mark.parametrize("target", ["imxrt700", "ethos-u55-128"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_channels_last_io_has_no_transpose_and_equal_numbers(case, target, tmp_path):
    model, inputs = case()
    calib = [inputs] + calibration(inputs, 4)
    plain = lower(copy.deepcopy(model), inputs, calib, target=target, intermediates_dir=tmp_path / "plain")
    cl_model, cl_inputs = _channels_last(model, inputs)
    cl_calib = [tuple(x.to(memory_format=torch.channels_last) for x in s) for s in calib]
    result = lower(cl_model, cl_inputs, cl_calib, target=target, intermediates_dir=tmp_path / "cl")
    report = result.report

    assert not report.rejections and len(report.partitions) == len(plain.report.partitions) == 1, str(report)
    assert report.num_delegated == plain.report.num_delegated
    part = report.partitions[0]
    assert "TRANSPOSE" in _litert_ops((tmp_path / "plain" / f"{plain.report.partitions[0].tag}.tflite").read_bytes())
    assert "TRANSPOSE" not in _litert_ops((tmp_path / "cl" / f"{part.tag}.tflite").read_bytes())
    assert part.input_formats == (1,)  # NHWC at the boundary: passed through as stored
    assert part.output_formats == ((1,) if len(part.output_shapes[0]) == 4 else (0,))

    host = run(result.pte, cl_inputs)[0]
    if host.dim() == 4:  # returned as ExecuTorch returns it: channels-last
        assert host.is_contiguous(memory_format=torch.channels_last) and not host.is_contiguous()
    assert torch.equal(host, run(plain.pte, inputs)[0])  # the same numbers as the contiguous model
    with torch.no_grad():
        ref = result.quantized_model(*cl_inputs).numpy()
    scale, zp = model_output_qparams(result.quantized_model)[0]
    assert_within_steps(quantize_np(host.numpy(), scale, zp), quantize_np(ref, scale, zp), 1, scale)


def test_neutron_header_flags_channels_last_io_for_the_device():
    """The device runtime reads the header's format flags: 1 for the channels-last input and output, which it
    passes through when the tensor is channels-last already."""
    from executorch_neutron.neutron.payload import unpack

    model, inputs = _channels_last(*_segmenter())
    result = lower(model, inputs, [inputs] + calibration(inputs, 2), target="imxrt700")
    header = unpack(result.report.partitions[0].blob).header
    assert header.input_formats == (1,) and header.output_formats == (1,)
    np.testing.assert_array_equal(  # a contiguous tensor still works: the runtime transposes it (flag 1)
        run(result.pte, tuple(x.contiguous() for x in inputs))[0].numpy(), run(result.pte, inputs)[0].numpy())

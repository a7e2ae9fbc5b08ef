"""Channels-last I/O pays no format tax: a model kept channels-last (`model.to(memory_format=torch.channels_last)`
with channels-last example inputs, as ExecuTorch recommends) lowers into the partitions of the contiguous model,
with no TRANSPOSE at the I/O of any partition TFLite, on both back ends; the host runtime takes and returns
channels-last tensors, and the numbers equal the contiguous model's.

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
from executorch_neutron.models.loading import load_model
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration
from harness import assert_within_steps, model_output_qparams, quantize_np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _segmenter():
    """4-D in and out: conv 3->8 3x3, ReLU, conv 8->5 1x1 on an 11x7 image (every extent differs)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 5, 1)).eval()
    return model, (torch.randn(1, 3, 11, 7),)


CASES = {
    "segmenter": _segmenter,
    "cifarnet": lambda: load_model(f"{EXAMPLES}/cifarnet.py:factory")[:2],  # flatten of a channels-last tensor
    "vww_mobilenet": lambda: load_model(f"{EXAMPLES}/vww_mobilenet.py:factory")[:2],  # global pool + classifier
}


def _channels_last(model, inputs):
    model = copy.deepcopy(model).to(memory_format=torch.channels_last)  # Module.to works in place: copy first
    return model, tuple(x.to(memory_format=torch.channels_last) for x in inputs)


def _transposes(tflite: bytes) -> tuple[int, int]:
    """(TRANSPOSE ops reading a graph input or writing a graph output, all TRANSPOSE ops), as LiteRT lists them."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=tflite)
    io = {d["index"] for d in it.get_input_details() + it.get_output_details()}
    ops = [op for op in it._get_ops_details() if op["op_name"] == "TRANSPOSE"]  # noqa: SLF001
    return sum(bool(io & {*op["inputs"], *op["outputs"]}) for op in ops), len(ops)


@pytest.mark.parametrize("target", ["imxrt700", "ethos-u55-128"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_channels_last_io_has_no_transpose_and_equal_numbers(case, target, tmp_path):
    model, inputs = case()
    calib = [inputs] + calibration(inputs, 4)
    # the contiguous model's I/O transposes as one rank-4 TRANSPOSE each (the U55 writes them in rank 3 between
    # reshapes by default, tests/ethos_u/test_transpose_form.py), so that they are found at the I/O
    four_d = {"transpose_form": "4d"} if target.startswith("ethos-u") else {}
    plain = lower(copy.deepcopy(model), inputs, calib, target=target, intermediates_dir=tmp_path / "plain", **four_d)
    cl_model, cl_inputs = _channels_last(model, inputs)
    cl_calib = [tuple(x.to(memory_format=torch.channels_last) for x in s) for s in calib]
    result = lower(cl_model, cl_inputs, cl_calib, target=target, intermediates_dir=tmp_path / "cl")
    report = result.report

    assert not report.rejections and len(report.partitions) == len(plain.report.partitions) == 1, str(report)
    assert report.npu_macs == plain.report.npu_macs  # the same work (op names may differ: mean vs global pool)
    part = report.partitions[0]
    plain_io, plain_all = _transposes((tmp_path / "plain" / f"{plain.report.partitions[0].tag}.tflite").read_bytes())
    cl_io, cl_all = _transposes((tmp_path / "cl" / f"{part.tag}.tflite").read_bytes())
    # none at the I/O; inside, only what the network computes (a flatten in PyTorch's order), as in the contiguous one
    assert plain_io >= 1 and cl_io == 0 and cl_all == plain_all - plain_io
    assert part.input_formats == (1,)  # NHWC at the boundary: passed through as stored
    assert part.output_formats == ((1,) if len(part.output_shapes[0]) == 4 else (0,))

    host = run(result.pte, cl_inputs)[0]
    if host.dim() == 4:  # returned as ExecuTorch returns it: channels-last
        assert host.is_contiguous(memory_format=torch.channels_last) and not host.is_contiguous()
    with torch.no_grad():
        ref = result.quantized_model(*cl_inputs).numpy()
    scale, zp = model_output_qparams(result.quantized_model)[0]
    steps = quantize_np(host.numpy(), scale, zp)
    assert_within_steps(steps, quantize_np(ref, scale, zp), 1, scale)
    # the same int8 numbers as the contiguous model (its float calibration sums in another order, so its scales
    # differ in the last float bits: compare steps, each in its own model's output scale)
    plain_scale, plain_zp = model_output_qparams(plain.quantized_model)[0]
    assert abs(plain_scale - scale) <= 1e-6 * scale and plain_zp == zp
    np.testing.assert_array_equal(steps, quantize_np(run(plain.pte, inputs)[0].numpy(), plain_scale, plain_zp))


def test_a_flatten_split_by_executorch_stays_whole_on_one_side():
    """ExecuTorch splits the flatten of a channels-last tensor into a copy to contiguous memory and a view, with no
    quantize between them: both run on the NPU, or, when one is kept on the CPU, both stay there in float."""
    model, inputs = _channels_last(*load_model(f"{EXAMPLES}/cifarnet.py:factory")[:2])
    calib = [inputs] + calibration(inputs, 2)
    result = lower(model, inputs, calib, target="imxrt700", operators_not_to_delegate=("aten.view_copy.default",))
    cpu = {r.op: r.reason for r in result.report.rejections}
    assert set(cpu) == {"aten.view_copy.default", "dim_order_ops._clone_dim_order.default"}, str(result.report)
    assert "int8 only with aten_view_copy_default" in cpu["dim_order_ops._clone_dim_order.default"]
    with torch.no_grad():
        ref = result.quantized_model(*inputs).numpy()
    scale, zp = model_output_qparams(result.quantized_model)[0]
    host = run(result.pte, inputs)[0].numpy()
    assert_within_steps(quantize_np(host, scale, zp), quantize_np(ref, scale, zp), 1, scale)


def test_neutron_header_flags_channels_last_io_for_the_device():
    """The device runtime reads the header's format flags: 1 for the channels-last input and output, which it
    passes through when the tensor is channels-last already."""
    from executorch_neutron.core.payload import unpack

    model, inputs = _channels_last(*_segmenter())
    result = lower(model, inputs, [inputs] + calibration(inputs, 2), target="imxrt700")
    header = unpack(result.report.partitions[0].blob).header
    assert header.input_formats == (1,) and header.output_formats == (1,)
    np.testing.assert_array_equal(  # a contiguous tensor still works: the runtime transposes it (flag 1)
        run(result.pte, tuple(x.contiguous() for x in inputs))[0].numpy(), run(result.pte, inputs)[0].numpy())

"""The real pipeline end to end: `lower()` -> .pte -> host runtime, compared with LiteRT and PyTorch.

For each model the .pte's outputs are compared (1) with the partition TFLite run directly in LiteRT on inputs
quantized the same way, and (2) with PyTorch's quantized model (`convert_pt2e`), in output quantization steps.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tflite_fixtures import run_litert
from torch import nn

from executorch_neutron import lower
from executorch_neutron.core.payload import unpack
from executorch_neutron.runtime import run


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)

    def forward(self, x):
        return torch.relu(self.conv2(torch.relu(self.conv1(x))))


class CpuOpBetween(nn.Module):
    """floor() has no Neutron kernel: it splits the graph into two partitions with a CPU op in between."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 6, 1)

    def forward(self, x):
        return self.conv2(torch.floor(torch.relu(self.conv1(x)) * 4))


class TwoInTwoOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_a = nn.Conv2d(3, 8, 3, padding=1)
        self.conv_b = nn.Conv2d(5, 8, 1)

    def forward(self, a, b):
        y = torch.relu(self.conv_a(a)) + self.conv_b(b)
        return y, torch.relu(self.conv_b(b))


def _inputs(*shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*s, generator=g) for s in shapes)


MODELS = {
    "small_cnn": (SmallCnn, [(1, 3, 12, 10)], 1),
    "cpu_op_between": (CpuOpBetween, [(1, 3, 9, 7)], 2),
    "two_in_two_out": (TwoInTwoOut, [(1, 3, 9, 7), (1, 5, 9, 7)], 1),
}


@pytest.fixture(scope="module", params=MODELS, ids=MODELS.keys())
def lowered(request):
    make, shapes, partitions = MODELS[request.param]
    torch.manual_seed(0)
    model = make().eval()
    inputs = _inputs(*shapes)
    calibration = [inputs] + [_inputs(*shapes, seed=s) for s in range(1, 5)]
    result = lower(model, inputs, calibration)
    assert len(result.payloads) == partitions, result.report
    return request.param, result, inputs


def _quant(details):
    return [d["quantization"] for d in details]


def _io_quant(tflite: bytes):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=tflite)
    return _quant(it.get_input_details()), _quant(it.get_output_details())


def _litert_outputs(blob: bytes, inputs):
    """The single partition's TFLite run directly in LiteRT, inputs quantized and laid out per the header."""
    payload = unpack(blob)
    h, tflite = payload.header, payload.tflite
    in_q, out_q = _io_quant(tflite)
    xs = []
    for i in range(h.n_inputs):
        scale, zp = in_q[i]
        x = inputs[h.input_args[i]].numpy()
        q = np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int8)
        xs.append(np.ascontiguousarray(q.transpose(0, 2, 3, 1)) if h.input_formats[i] and q.ndim == 4 else q)
    outs = [None] * h.n_outputs
    for j, o in enumerate(run_litert(tflite, xs)):
        o = o.transpose(0, 3, 1, 2) if h.output_formats[j] and o.ndim == 4 else o
        scale, zp = out_q[j]
        outs[h.output_args[j]] = ((o.astype(np.float32) - zp) * scale, scale)
    return outs


def _steps(a: torch.Tensor, b, scale: float) -> int:
    return int(np.round(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)) / scale).max())


SINGLE_PARTITION = [name for name, (_, _, partitions) in MODELS.items() if partitions == 1]


@pytest.mark.parametrize("lowered", SINGLE_PARTITION, indirect=True)
def test_pte_equals_litert_on_the_partition(lowered):
    """Models with two partitions: test_two_partitions_litert.py chains their TFLite files in LiteRT."""
    name, result, inputs = lowered
    outputs = run(result.pte, inputs)
    expected = _litert_outputs(next(iter(result.payloads.values())), inputs)
    assert len(outputs) == len(expected)
    for out, (ref, scale) in zip(outputs, expected):
        assert out.shape == ref.shape
        assert _steps(out.numpy(), ref, scale) == 0


def test_pte_is_within_one_step_of_pytorch_quantized_model(lowered):
    name, result, inputs = lowered
    outputs = run(result.pte, inputs)
    with torch.no_grad():
        refs = result.quantized_model(*inputs)
    refs = refs if isinstance(refs, (tuple, list)) else (refs,)
    last = unpack(list(result.payloads.values())[-1])
    _, out_q = _io_quant(last.tflite)
    scales = [out_q[j][0] for j in np.argsort(last.header.output_args)]
    for out, ref, scale in zip(outputs, refs, scales, strict=True):
        assert out.shape == ref.shape
        assert _steps(out.numpy(), ref.numpy(), scale) <= 1, f"{name}: more than one output step from convert_pt2e"

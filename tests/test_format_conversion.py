"""`use_neutron_for_format_conversion` means what NXP documents, and the host runtime honours both settings.

True (default): the partition keeps ExecuTorch's channels-first tensors at its boundary, converts with TRANSPOSE ops
inside (the NPU does it) and the payload's format flags are 0. False: rank-4 boundary tensors are channels-last,
the flags are 1 and the runtime transposes on the CPU. Either way the .pte, run by the host runtime, must agree with
PyTorch's quantized model (convert_pt2e) within 1 output quantization step.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ai_edge_litert import schema_py_generated as schema
from torch import nn

from executorch_neutron import lower
from executorch_neutron.core.payload import unpack
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration
from harness import io_quant


class TwoInTwoOut(nn.Module):
    """a [1,3,6,10], b [1,8,6,10] -> (conv_b(b) [1,16,6,10], relu(conv_a(a)) + b [1,8,6,10]): every extent differs."""

    def __init__(self):
        super().__init__()
        self.conv_a = nn.Conv2d(3, 8, 3, padding=1)
        self.conv_b = nn.Conv2d(8, 16, 1)

    def forward(self, a, b):
        return self.conv_b(b), torch.relu(self.conv_a(a)) + b


SETTINGS = {
    # setting: (format flag of every boundary tensor, TFLite graph input shapes, boundary transposes inside)
    "neutron_converts": (True, 0, [[1, 3, 6, 10], [1, 8, 6, 10]], True),
    "runtime_converts": (False, 1, [[1, 6, 10, 3], [1, 6, 10, 8]], False),
}


def _op_names(tflite: bytes) -> list[str]:
    model = schema.ModelT.InitFromPackedBuf(tflite, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    return [names[max(model.operatorCodes[op.opcodeIndex].builtinCode,
                      model.operatorCodes[op.opcodeIndex].deprecatedBuiltinCode)]
            for op in model.subgraphs[0].operators]


@pytest.mark.parametrize("setting", SETTINGS.values(), ids=SETTINGS.keys())
def test_format_conversion_setting_on_two_inputs_and_two_outputs(setting):
    neutron_converts, flag, input_shapes, transposes_inside = setting
    torch.manual_seed(3)
    model = TwoInTwoOut().eval()
    inputs = (torch.randn(1, 3, 6, 10), torch.randn(1, 8, 6, 10))
    result = lower(model, inputs, [inputs] + calibration(inputs, 4), reference=True,
                   use_neutron_for_format_conversion=neutron_converts)
    (part,) = result.report.partitions
    payload = unpack(part.blob)
    header = payload.header
    assert (header.n_inputs, header.n_outputs) == (2, 2)
    assert set(header.input_formats) == set(header.output_formats) == {flag}
    graph = schema.ModelT.InitFromPackedBuf(payload.tflite, 0).subgraphs[0]
    in_shapes = [list(graph.tensors[t].shape) for t in graph.inputs]
    assert [in_shapes[header.input_args.index(k)] for k in range(2)] == input_shapes
    ops = _op_names(payload.tflite)
    assert (ops.count("TRANSPOSE") >= 4) == transposes_inside, ops  # 2 in + 2 out, each on the NPU

    outputs = run(result.pte, inputs)
    with torch.no_grad():
        reference = result.quantized_model(*inputs)
    _, out_quant = io_quant(payload.tflite)
    out_graph_shapes = [tuple(graph.tensors[t].shape) for t in graph.outputs]
    for got, ref in zip(outputs, reference):
        # the partition output with this shape (every output shape differs) gives the quantization step
        shape = tuple(ref.shape) if flag == 0 else tuple(ref.permute(0, 2, 3, 1).shape)
        scale = out_quant[out_graph_shapes.index(shape)][0]
        assert got.shape == ref.shape
        worst = float(np.abs(got.numpy() - ref.numpy()).max()) / scale
        assert worst <= 1 + 1e-3, f"{worst:.2f} output steps (scale {scale})"


class TwoReaders(nn.Module):
    """x is read by two convolutions: one channels-last copy of it serves both."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(3, 8, 1)

    def forward(self, x):
        return self.a(x) + self.b(x)


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
def test_a_tensor_read_by_several_ops_is_transposed_once(target, tmp_path):
    torch.manual_seed(0)
    x = (torch.randn(1, 3, 6, 10),)
    result = lower(TwoReaders().eval(), x, [x] + calibration(x, 4), target=target, intermediates_dir=tmp_path)
    assert len(result.report.partitions) == 1, result.report
    (tflite,) = [p.read_bytes() for p in tmp_path.glob("*.tflite")]
    assert _op_names(tflite).count("TRANSPOSE") <= 2, _op_names(tflite)  # the input's, once; the output's
    with torch.no_grad():
        reference = result.quantized_model(*x)
    (scale, _), = io_quant(tflite)[1]
    assert float((run(result.pte, x)[0] - reference).abs().max()) / scale <= 1.001

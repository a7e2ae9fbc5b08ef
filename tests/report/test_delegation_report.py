"""Delegation report figures checked against hand counts on small models; Markdown/JSON/HTML renderings."""

import json

import jsonschema
import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.report import load_schema
from executorch_neutron.report.macs import node_macs


class ConvLinear(nn.Module):
    """conv 3->8 k3 pad1 on 6x6, relu, flatten, linear 288->10."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 6 * 6, 10)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.conv(x)), 1))


CONV_MACS = 8 * 6 * 6 * (3 * 3 * 3)  # outputs x (C_in x kernel area) = 7776
LINEAR_MACS = 10 * 288  # outputs x in_features = 2880


@pytest.fixture(scope="module")
def split_report():
    """The linear layer is kept on the CPU: one partition (conv, relu, view) and one CPU node."""
    torch.manual_seed(0)
    x = torch.randn(1, 3, 6, 6)
    result = lower(ConvLinear().eval(), (x,), [(x,), (torch.randn(1, 3, 6, 6),)],
                   operators_not_to_delegate=("aten.linear.default",))
    return result.report


def test_node_counts_and_reasons(split_report):
    r = split_report
    assert (r.num_delegated, r.num_compute) == (3, 4)
    assert dict(r.delegated_ops) == {"aten.convolution.default": 1, "aten.relu.default": 1,
                                     "aten.view_copy.default": 1}
    groups = r.cpu_groups
    assert list(groups) == ["aten.linear.default"]
    assert groups["aten.linear.default"][0].rejection.reason == "excluded by operators_not_to_delegate"


def test_macs_hand_counted(split_report):
    r = split_report
    assert r.partitions[0].macs == CONV_MACS
    assert r.npu_macs == CONV_MACS
    assert r.total_macs == CONV_MACS + LINEAR_MACS
    assert r.cpu_groups["aten.linear.default"][0].macs == LINEAR_MACS
    assert r.mac_share == pytest.approx(CONV_MACS / (CONV_MACS + LINEAR_MACS))


def test_bytes_hand_counted(split_report):
    p = split_report.partitions[0]
    assert p.weight_bytes == 8 * 3 * 3 * 3 + 8 * 4  # int8 weights + int32 bias
    assert p.largest_activation_bytes == 8 * 6 * 6  # int8 conv output
    assert p.input_shapes == [(1, 3, 6, 6)] and p.output_shapes == [(1, 288)]
    mem = split_report.memory  # read from the .pte (tests/report/test_memory.py checks its figures)
    assert mem.pte_bytes == split_report.pte_bytes and mem.sram_bytes == 7_500 * 1024
    assert split_report.model_bytes == split_report.pte_bytes


def test_json_validates_against_schema(split_report):
    data = json.loads(split_report.to_json())
    jsonschema.validate(data, load_schema())
    assert data["totals"]["total_macs"] == CONV_MACS + LINEAR_MACS
    assert data["cpu"][0]["nodes"][0]["reason"] == "excluded by operators_not_to_delegate"
    assert data["memory"]["target"] == "imxrt700" and data["memory"]["estimated"] is True  # host-reference payload


def test_text_markdown_html(split_report, tmp_path):
    text = str(split_report)
    assert "3 of 4 compute nodes (75.0%)" in text and "On the CPU" in text and "memory (from the .pte" in text
    md = split_report.save(tmp_path / "r.md").read_text()
    assert "| `aten.linear.default` | aten_linear_default | excluded by operators_not_to_delegate |" in md
    html = split_report.save(tmp_path / "r.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "http" not in html.replace("https://", "")
    assert "<script" not in html and "neutron_0" in html and "aten.linear.default" in html


MAC_CASES = {
    "conv_stride2_groups2": (nn.Conv2d(4, 8, 3, stride=2, groups=2), (1, 4, 9, 7), 8 * 4 * 3 * (2 * 9)),
    "depthwise": (nn.Conv2d(8, 8, 3, padding=1, groups=8), (1, 8, 5, 6), 8 * 5 * 6 * 9),
    "conv1d": (nn.Conv1d(4, 6, 3), (1, 4, 10), 6 * 8 * 4 * 3),
    "conv_transpose": (nn.ConvTranspose2d(4, 6, 2, stride=2), (1, 4, 3, 5), 4 * 3 * 5 * 6 * 4),
    "linear_3d": (nn.Linear(5, 7), (2, 3, 5), 2 * 3 * 7 * 5),
}


@pytest.mark.fast
@pytest.mark.parametrize("case", MAC_CASES.values(), ids=MAC_CASES.keys())
def test_node_macs_formula(case):
    module, shape, expected = case
    ep = torch.export.export(module, (torch.randn(shape),))
    assert sum(node_macs(n) for n in ep.graph.nodes) == expected


@pytest.mark.fast
def test_matmul_macs():
    class MatMul(nn.Module):
        def forward(self, a, b):
            return a @ b

    ep = torch.export.export(MatMul(), (torch.randn(2, 3, 4), torch.randn(2, 4, 5)))
    assert sum(node_macs(n) for n in ep.graph.nodes) == 2 * 3 * 5 * 4


class FixedOutputsIntoCat(nn.Module):
    """cat(softmax(y), tanh(y)): LiteRT fixes softmax at scale 1/256 zero point -128 and tanh at 1/128, 0; cat
    shares one set of parameters, so the quantized model requantizes the tanh output. With `tanh_out`, the tanh
    result is also a model output: its dequantize is read outside the NPU, so the requantization runs on the CPU."""

    def __init__(self, tanh_out=False):
        super().__init__()
        self.fc, self.tanh_out = nn.Linear(16, 16), tanh_out

    def forward(self, x):
        y = self.fc(x)
        t = torch.tanh(y)
        cat = torch.cat([torch.softmax(y, -1), t], -1)
        return (cat, t) if self.tanh_out else cat


def test_requantization_between_npu_ops_stays_in_the_partition():
    torch.manual_seed(0)
    samples = [(torch.randn(2, 16),) for _ in range(4)]
    report = lower(FixedOutputsIntoCat().eval(), samples[0], samples).report
    assert report.rejections == [] and len(report.partitions) == 1, str(report)
    assert report.requantizations == []


def test_requantization_between_partitions_is_reported():
    torch.manual_seed(0)
    samples = [(torch.randn(2, 16),) for _ in range(4)]
    report = lower(FixedOutputsIntoCat(tanh_out=True).eval(), samples[0], samples).report
    assert report.rejections == [] and len(report.partitions) == 2  # nothing rejected, yet two partitions: why?
    (r,) = report.requantizations
    assert (r.from_scale, r.from_zero_point, r.to_scale, r.to_zero_point) == (1 / 128, 0, 1 / 256, -128)
    assert r.source.endswith("of neutron_0")
    assert "Requantized on the CPU" in str(report) and "Requantized on the CPU" in report.to_markdown()
    data = json.loads(report.to_json())
    jsonschema.validate(data, load_schema())
    assert data["cpu_requantizations"][0]["to"] == {"scale": 1 / 256, "zero_point": -128}

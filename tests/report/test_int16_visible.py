"""Which layers run in int16 is visible (issue 44): after `--precision "block1=int16" --target imx93` the text report
and the JSON's precision_notes name exactly the nodes whose outputs PyTorch's quantized model quantizes to int16."""

import json

import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.report.delegation import INT16_NOTE


class TwoBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.block2 = nn.Sequential(nn.Conv2d(8, 4, 3, padding=1), nn.ReLU())

    def forward(self, x):
        return self.block2(self.block1(x))


def _int16_outputs(quantized) -> set[str]:
    """Nodes of PyTorch's own quantized model (convert_pt2e) whose output a quantize node takes to int16."""
    names = set()
    for node in quantized.graph.nodes:
        if "quantize_per_tensor" in str(node.target) and "dequantize" not in str(node.target):
            if torch.int16 in node.args and node.args[0].op == "call_function":
                names.add(node.args[0].name)
    return names


def test_int16_layers_are_named_in_the_text_and_json_reports(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 6)
    result = lower(TwoBlocks().eval(), (x,), [(x,)], target="imx93", precision="block1=int16")
    notes = result.report.precision_notes
    int16 = {n for n, note in notes.items() if note == INT16_NOTE}
    reference = _int16_outputs(result.quantized_model)
    assert reference, "the precision config quantized nothing to int16"
    assert len(int16) == len(reference), (int16, reference)
    text = str(result.report)
    assert all(f"  {n}: {INT16_NOTE}" in text for n in int16)
    data = json.loads(result.report.save(tmp_path / "r.json").read_text())
    assert {e["node"] for e in data["precision_notes"] if e["note"] == INT16_NOTE} == int16

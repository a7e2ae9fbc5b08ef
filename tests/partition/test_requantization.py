"""A requantization between two NPU ops (dequantize -> quantize with other parameters, as PyTorch's quantized model
places when two annotations disagree) stays inside the partition as a TFLite QUANTIZE instead of splitting it.

The quantized model is PyTorch's own (convert_pt2e) with a requantization inserted between two ops, lowered with
quantize_model=False: it is also the reference. Bound: 1 step after a conv whose input is the requantized model
input; 2 steps when the requantized tensor is itself computed (the pooled mean may be one step off, the
requantization rounds once more, and the linear sums 16 of those inputs).
"""

import pytest
import torch
from ai_edge_litert import schema_py_generated as schema
from torch import nn

from executorch_neutron import lower
from executorch_neutron.core.payload import unpack
from executorch_neutron.models.zoo import calibration
from harness import assert_within_steps, lower_and_run

QDQ = torch.ops.quantized_decomposed


def _with_requantization(model, inputs, consumer: type, factor: float, shift: int):
    """PyTorch's quantized `model` with the input of its first `consumer` op requantized (scale * factor,
    zero point + shift)."""
    q = lower(model, inputs, [inputs] + calibration(inputs, 4)).quantized_model
    target = {nn.Conv2d: torch.ops.aten.conv2d.default, nn.Linear: torch.ops.aten.linear.default}[consumer]
    node = [n for n in q.graph.nodes if n.target == target][-1]
    dq = node.args[0]
    scale, zp = float(dq.args[1]) * factor, int(dq.args[2]) + shift
    with q.graph.inserting_before(node):
        rq = q.graph.call_function(QDQ.quantize_per_tensor.default, (dq, scale, zp, -128, 127, torch.int8))
        rdq = q.graph.call_function(QDQ.dequantize_per_tensor.default, (rq, scale, zp, -128, 127, torch.int8))
    node.replace_input_with(dq, rdq)
    q.recompile()
    return q


CASES = {
    "conv_relu_conv": (lambda: nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Conv2d(16, 8, 1)), (1, 3, 11, 9),
                       nn.Conv2d, 1.7, 5, 1),
    "pool_linear": (lambda: nn.Sequential(nn.Conv2d(3, 16, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                          nn.Linear(16, 10)), (1, 3, 10, 12), nn.Linear, 0.6, -3, 2),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_requantization_stays_in_the_partition(case):
    make, shape, consumer, factor, shift, bound = case
    torch.manual_seed(0)
    inputs = (torch.randn(*shape),)
    quantized = _with_requantization(make().eval(), inputs, consumer, factor, shift)
    r = lower_and_run(quantized, inputs, [inputs], quantize_model=False)
    assert r.rejections == [], str(r.result.report)
    model = schema.ModelT.InitFromPackedBuf(unpack(r.result.report.partitions[0].blob).tflite, 0)
    codes = [model.operatorCodes[op.opcodeIndex].builtinCode for op in model.subgraphs[0].operators]
    assert schema.BuiltinOperator.QUANTIZE in codes
    assert_within_steps(r.output, r.reference, bound, r.output_scale)


def test_in_place_dropout_head_is_one_partition():
    """torchvision's classifier head (EfficientNet-B0: pool, flatten, Dropout(p, inplace=True), Linear): the in-place
    dropout of eval mode is removed before annotation, so nothing requantizes the pooled features on the CPU."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.SiLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Dropout(0.2, inplace=True), nn.Linear(16, 10)).eval()
    r = lower_and_run(model, (torch.randn(1, 3, 12, 10),))
    assert r.rejections == [], str(r.result.report)
    assert_within_steps(r.output, r.reference, 1, r.output_scale)

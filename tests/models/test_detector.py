"""A YOLOv8/YOLO11-style detector (tests/models/detector_blocks.py) lowers whole: its anchor grid and stride table,
computed in forward() from the feature maps' shapes (arange, meshgrid, stack, full of a stride read with .item(),
cat), fold into constants before partitioning (passes/fold_constants.py), so the program is one partition with no
CPU compute node on a Neutron and an Ethos-U target.

Bound: the .pte on the host runtime within 3 output steps of PyTorch's quantized model, the bound of the other
whole models (tests/models/test_arch_families.py): one step per op, carried through the network's layers.
"""

import operator

import pytest

from executorch_neutron import lower
from executorch_neutron.models.zoo import calibration
from harness import pte_steps
from models.detector_blocks import detector


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
def test_detector_lowers_in_one_partition_with_no_cpu_compute(target):
    model, inputs = detector()
    calib = [inputs] + calibration(inputs, 4)
    result = lower(model, inputs, calib, target=target)
    report = result.report
    assert len(report.partitions) == 1, str(report)
    assert report.rejections == [], str(report)
    gm = result.edge_program.exported_program().graph_module
    cpu = [str(n.target) for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem
           and not any(k in str(n.target) for k in ("executorch_call_delegate", "alloc"))]
    assert all("quantize_per_tensor" in op for op in cpu) and len(cpu) == 2, cpu  # the model's input and output
    # 96x96 input: 12x12 + 6x6 + 3x3 anchors; 4 box coordinates + 8 class scores each
    assert report.partitions[0].output_shapes == [(1, 12, 189)]
    worst = pte_steps(result, calib[1:5])
    assert worst <= 3, f"the .pte is {worst} output steps from PyTorch's quantized model"

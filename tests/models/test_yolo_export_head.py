"""The YOLOv8 / YOLO11 detection head as its package writes it in export mode (tests/models/yolo_head_blocks.py,
reconstructed from the facts of its behaviour; the package is AGPL and is not imported) lowers whole: its anchor grid
(`arange(w).type_as(feats[0]) + 0.5`, `meshgrid`, `stack(...).view(-1, 2)`) and stride columns
(`feats[0].new_full((h * w, 1), stride[i])`) read a run-time feature map for its dtype only, and fold into constants
before annotation (passes/fold_constants.py). Before that fold the package's head at 160x160 lowered into 2
partitions with 21 CPU nodes (expand_copy, view_copy, _to_dim_order_copy, full) on imxrt700 and imx93.

The head as the package builds it (its branches' Conv-BN-SiLU layers, 3 levels, a stride buffer) lowers at 160x160
on both targets; the variants (xy indexing, the strides as 0-d tensors or as Python floats, two levels), with one 1x1
convolution per branch at 64x64, lower two to a lowering on one target each (every lowering costs the suite about
as much whatever its resolution), and each of them alone folds in both targets' pass pipelines at pass level.

Bound: the .pte on the host runtime within 3 output steps of PyTorch's quantized model, the whole-detector bound of
tests/models/test_detector.py (one step per op, carried through the network's layers).
"""

import copy
import operator

import pytest
import torch

from executorch_neutron import lower
from executorch_neutron.models.zoo import calibration
from executorch_neutron.passes import PassContext, run_passes
from executorch_neutron.target import ETHOS_U, NEUTRON
from harness import pte_steps
from models.yolo_head_blocks import HeadSpec, yolo_detector

# name: (head, input resolution, targets)
CASES = {
    "package_head_160": (HeadSpec(), 160, ("imxrt700", "imx93")),
    "xy_indexing": (HeadSpec(indexing="xy", branch_depth=0), 64, ()),
    "stride_0d_tensors": (HeadSpec(stride="tensor", branch_depth=0), 64, ()),
    "stride_python_floats": (HeadSpec(stride="float", branch_depth=0), 64, ()),
    "two_levels": (HeadSpec(levels=2, branch_depth=0), 64, ()),
    # the variants, two to a lowering (they change independent parts of the head) to keep the suite's time down
    "xy_indexing_float_strides": (HeadSpec(indexing="xy", stride="float", branch_depth=0), 64, ("imxrt700",)),
    "two_levels_0d_tensor_strides": (HeadSpec(stride="tensor", levels=2, branch_depth=0), 64, ("imx93",)),
}
LOWERINGS = {f"{name}-{target}": (spec, res) + (target,) for name, (spec, res, targets) in CASES.items()
             for target in targets}


def _anchors(resolution: int, levels: int) -> int:
    return sum((resolution // s) ** 2 for s in (8, 16, 32)[:levels])


@pytest.mark.parametrize("case", LOWERINGS.values(), ids=LOWERINGS.keys())
def test_export_mode_head_lowers_in_one_partition_with_no_cpu_compute(case):
    spec, resolution, target = case
    model, inputs = yolo_detector(spec, resolution)
    calib = [inputs] + calibration(inputs, 4)
    result = lower(model, inputs, calib, target=target)
    report = result.report
    assert len(report.partitions) == 1, str(report)
    assert report.rejections == [], str(report)
    gm = result.edge_program.exported_program().graph_module
    cpu = [str(n.target) for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem
           and not any(k in str(n.target) for k in ("executorch_call_delegate", "alloc"))]
    assert all("quantize_per_tensor" in op for op in cpu) and len(cpu) == 2, cpu  # the model's input and output
    assert report.partitions[0].output_shapes == [(1, 4 + 8, _anchors(resolution, spec.levels))]
    worst = pte_steps(result, calib[1:5])
    assert worst <= 3, f"the .pte is {worst} output steps from PyTorch's quantized model"


#: ops of the anchor grid and stride columns, none of which may be left after the passes
GRID_OPS = ("arange", "type_as", "meshgrid", "stack", "new_full", "full", "item", "_local_scalar_dense", "expand",
            "_to_copy", "aten.to.")


def test_every_variant_folds_its_grid_in_both_pipelines():
    """Pass level: every variant's grid folds in the pipeline of a Neutron and of an Ethos-U target, and the
    transformed graph computes what the model computes on another input."""
    other = (torch.randn(1, 3, 64, 64),)
    for name, (spec, _, _) in CASES.items():
        model, inputs = yolo_detector(HeadSpec(spec.indexing, spec.stride, spec.levels, branch_depth=0), 64)
        exported = torch.export.export(model, inputs, strict=False).module()
        for backend in (NEUTRON, ETHOS_U):
            gm = run_passes(copy.deepcopy(exported), PassContext(backend=backend))
            left = [n.name for n in gm.graph.nodes
                    if n.op == "call_function" and any(k in str(n.target) for k in GRID_OPS)]
            assert left == [], f"{name}, {backend}: {left}"
            torch.testing.assert_close(gm(*other), model(*other), rtol=1e-5, atol=1e-4)

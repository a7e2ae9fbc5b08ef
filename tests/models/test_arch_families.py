"""Architecture families (tests/models/arch_blocks.py): each lowers to one partition with all compute on the NPU,
the .pte on the host runtime stays close to PyTorch's quantized model, and as close to the float model.

Bound for these whole models: at most 3 output steps anywhere and at least 95% of outputs within 1 step, the same
as tests/test_models.py. Each TFLite op matches its quantized PyTorch op within one step of its own output, but a
one-step difference in an intermediate is then multiplied through the following layers; over the 10-25 layers
here that can add up to a few output steps. SQNR of the .pte vs the float model may be at most 1 dB below that of
PyTorch's quantized model (the rewrites must not cost accuracy the reference does not also pay).
"""

import pytest
import torch
from torch import nn

from models import arch_blocks
from executorch_neutron.models.zoo import calibration
from harness import compare_pte, lower_and_run, steps

# family -> delegated ops that show the family's defining block on the NPU (counted from the model's structure)
SIGNATURE = {
    # 1 stem + 3 x (expand, depthwise, 2 SE, project) + 3 hardsigmoid gates (depthwise 1x1 conv + clamp(0, 1))
    "mobilenet_v3": {"aten.hardswish.default": 7, "aten.convolution.default": 19, "aten.clamp.default": 3},
    "efficientnet": {"aten.sigmoid.default": 7, "aten.mul.Tensor": 7},  # 5 SiLU (x * sigmoid(x)) + 2 SE gates
    "shufflenet_v2": {"aten.permute_copy.default": 2},  # one channel shuffle per unit, rank 4
    "resnext": {"aten.convolution.default": 7},  # 1 + 3 + 3: the grouped 3x3 convs stay one node each
    "resnet_stem": {"aten.constant_pad_nd.default": 1, "aten.max_pool2d_with_indices.default": 1},
    "squeezenet": {"aten.constant_pad_nd.default": 2, "aten.max_pool2d_with_indices.default": 2},
}


@pytest.mark.parametrize("name", arch_blocks.FAMILIES)
def test_family_runs_on_the_npu_in_one_partition(name):
    model, inputs = arch_blocks.FAMILIES[name]()
    calib = [inputs] + calibration(inputs, 8)
    r = lower_and_run(model, inputs, calib)
    report = r.result.report
    assert len(report.partitions) == 1, str(report)
    assert report.rejections == [], str(report)
    gm = r.result.edge_program.exported_program().graph_module
    cpu_ops = sorted(str(n.target) for n in gm.graph.nodes if n.op == "call_function"
                     and not any(k in str(n.target) for k in ("executorch_call_delegate", "getitem", "alloc")))
    assert len(cpu_ops) == 2 and all("quantize_per_tensor" in op for op in cpu_ops), cpu_ops
    delegated = report.delegated_ops
    for op, count in SIGNATURE[name].items():
        assert delegated.get(op) == count, f"{op}: {delegated.get(op)} delegated, expected {count}\n{delegated}"

    # the .pte on ExecuTorch's runtime + host NeutronBackend vs PyTorch's quantized model and the float model
    c = compare_pte(r, model, calib[1:5])
    d, within1, ours_db, ref_db = c.steps, c.within1, c.sqnr_db, c.quantized_sqnr_db
    print(f"{name}: max {int(d.max())} steps, {100 * within1:.1f}% within 1 step; SQNR vs float {ours_db:.1f} dB "
          f"(quantized PyTorch {ref_db:.1f} dB)")
    assert d.max() <= 3 and within1 >= 0.95, f"max {d.max()} steps, {within1:.3f} within 1 step"
    assert ours_db >= ref_db - 1.0, f"SQNR {ours_db:.1f} dB vs quantized PyTorch {ref_db:.1f} dB"


@pytest.mark.parametrize("pool, size", [
    (nn.MaxPool2d(3, 2, 1), (22, 18)),  # ResNet stem pooling, not SAME on even sizes
    (nn.MaxPool2d(3, 2, ceil_mode=True), (20, 16)),  # SqueezeNet pooling, ceil_mode adds a window
], ids=["stem_padding", "ceil_mode"])
def test_max_pool_of_signed_values_on_the_npu(pool, size):
    """A max pool whose input may be negative (conv without activation): edges replicated (slices + cat) instead
    of PyTorch's -inf padding; one partition, within 1 step (the conv's bound: pooling and copies are exact)."""
    torch.manual_seed(0)
    x = torch.randn(1, 3, *size)
    r = lower_and_run(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), pool).eval(), (x,))
    assert r.rejections == [], str(r.result.report)
    assert r.delegated_ops.get("aten.cat.default", 0) >= 1, r.delegated_ops
    assert steps(r.output, r.reference).max() <= 1

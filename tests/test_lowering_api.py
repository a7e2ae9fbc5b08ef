"""lower() and the plain ExecuTorch flow do what they say: progress per stage and per partition, no silently
ignored argument, an already quantized model as its own reference, and no hidden import needed."""

import subprocess
import sys

import pytest
import torch
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

import executorch_neutron
from executorch_neutron import NeutronCompileSpec, NeutronQuantizer, lower
from executorch_neutron.models import zoo
from executorch_neutron.lowering import LoweringError


class _Bar:
    """A tqdm stand-in recording what lower() reports."""

    log: list = []

    def __init__(self, iterable=None, total=None, desc="", unit=""):
        self.iterable, self.total, self.desc, self.unit, self.n = iterable, total, desc, unit, 0
        _Bar.log.append(self)

    def __iter__(self):
        for x in self.iterable:
            yield x
            self.n += 1

    def update(self, k=1):
        self.n += k

    def set_description(self, desc):
        self.desc = desc

    def set_postfix_str(self, s):
        pass

    def close(self):
        pass


def _two_partitions():
    torch.manual_seed(0)  # the weights and inputs must not depend on which tests ran before in the worker
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Tanh(), nn.Conv2d(8, 8, 1)).eval()
    x = (torch.randn(1, 3, 6, 5),)
    return model, x, [x] + zoo.calibration(x, 3)


def test_progress_follows_stages_calibration_and_partitions():
    model, x, calib = _two_partitions()
    _Bar.log = []
    result = lower(model, x, calib, progress=_Bar, operators_not_to_delegate=("aten.tanh.default",))
    assert len(result.report.partitions) == 2
    stages = next(b for b in _Bar.log if b.unit == "stage")
    assert stages.total == 5 and stages.n == 5  # quantize, export, partition + convert, to_executorch, host check
    calibration = next(b for b in _Bar.log if b.unit == "batch")
    assert calibration.n == len(calib)
    parts = next(b for b in _Bar.log if b.unit == "partition")
    assert parts.total == 2 and parts.n == 2


def test_target_conflicting_with_spec_is_an_error():
    model, x, calib = _two_partitions()
    with pytest.raises(LoweringError, match="conflicts with spec.target"):
        lower(model, x, calib, target="imx95", spec=NeutronCompileSpec(target="imxrt700"))


def test_compare_an_already_quantized_model():
    """quantize_model=False (CLI --qat): the given quantized model is the reference the .pte is compared with."""
    model, x, calib = _two_partitions()
    m = prepare_pt2e(torch.export.export(model, x).module(), NeutronQuantizer())
    for sample in calib:
        m(*sample)
    quantized = convert_pt2e(m)
    result = lower(quantized, x, quantize_model=False)
    assert result.quantized_model is quantized
    cmp = executorch_neutron.compare(quantized, x, result=result, samples=calib)
    assert cmp.outputs[0].max_steps is not None and cmp.outputs[0].max_steps <= 1 + 1e-3  # float rounding of steps


PLAIN_FLOW = """
import torch
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from executorch.exir import to_edge_transform_and_lower
from executorch_neutron import NeutronPartitioner, NeutronQuantizer

model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).eval()
x = (torch.randn(1, 3, 8, 8),)
m = prepare_pt2e(torch.export.export(model, x).module(), NeutronQuantizer())
m(*x)
m = convert_pt2e(m)
edge = to_edge_transform_and_lower(torch.export.export(m, x), partitioner=[NeutronPartitioner()])
print(len(edge.to_executorch().buffer))
"""


def test_plain_executorch_flow_needs_no_extra_import():
    """Before: 'Missing out variants: quantize_per_tensor, dequantize_per_tensor' unless the user imported
    executorch.kernels.quantized; importing the partitioner registers them."""
    proc = subprocess.run([sys.executable, "-c", PLAIN_FLOW], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.strip().splitlines()[-1]) > 0


@pytest.mark.parametrize("layout", ["numpy_new_axis", "permuted_view"])
def test_example_inputs_in_any_layout_give_a_pte_that_runs(layout):
    """An example input with a 0 stride (numpy's `a[:, None][:1]`) or a permuted view lowers, and the .pte takes
    plain contiguous inputs: its host run is within 1 step of PyTorch's quantized model."""
    import numpy as np
    from harness import assert_within_steps, model_output_qparams, quantize_np

    from executorch_neutron.runtime import run

    rng = np.random.default_rng(0)
    if layout == "numpy_new_axis":  # [1, 3, 8, 8] with strides (0, 64, 8, 1)
        example = torch.from_numpy(rng.standard_normal((4, 3, 8, 8)).astype(np.float32)[:, None][:1]).squeeze(0)
    else:
        example = torch.randn(1, 8, 3, 8).transpose(1, 2)  # [1, 3, 8, 8] viewed with dim order (0, 2, 1, 3)
    assert 0 in example.stride() or not example.is_contiguous()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval()
    result = lower(model, (example,), [(example,)] + zoo.calibration((example.contiguous(),), 4))
    x = example.contiguous()
    (out,) = run(result.pte, [x])
    (scale, zp), = model_output_qparams(result.quantized_model)
    with torch.no_grad():
        reference = result.quantized_model(x)
    assert_within_steps(quantize_np(out.numpy(), scale, zp), quantize_np(reference.numpy(), scale, zp), 1, scale)

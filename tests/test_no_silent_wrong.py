"""No silent wrong numbers: input memory layouts, a forward() that changes its input, 0-d scalar inputs, empty and
already-quantized calibration, buffers written through indexing."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.lowering import LoweringError
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration
from bad_input_catalogue import MODELS

CATALOGUE: dict = {}
exec(MODELS, CATALOGUE)  # the catalogue's models: Net (conv | floor on the CPU | conv), InPlace, ScaledByInput
Net, ChangesItsInput, ScaledByInput = CATALOGUE["Net"], CATALOGUE["InPlace"], CATALOGUE["ScaledByInput"]


# layout name -> the same values in another memory layout
LAYOUTS = {
    "channels_last": lambda x: x.to(memory_format=torch.channels_last),
    "fortran_npy": lambda x: torch.from_numpy(np.asfortranarray(x.numpy())),
    "transposed_view": lambda x: x.transpose(2, 3).contiguous().transpose(2, 3),
    "sliced_view": lambda x: torch.cat([x, x], 3)[..., : x.shape[3]],
}


@pytest.fixture(scope="module")
def program():
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 7, 5),)
    return lower(Net().eval(), inputs, [inputs] + calibration(inputs, 4), reference=True).pte, inputs[0]


@pytest.mark.parametrize("layout", LAYOUTS, ids=LAYOUTS.keys())
def test_any_memory_layout_gives_the_contiguous_outputs(program, layout):
    pte, x = program
    y = LAYOUTS[layout](x)
    assert torch.equal(y, x) and (not y.is_contiguous() or layout == "channels_last")
    expected = run(pte, [x])[0]  # ExecuTorch's runtime on the contiguous tensor is the reference
    assert torch.equal(run(pte, [y])[0], expected)


@pytest.mark.parametrize("calib", ["default", "given"])
def test_lower_leaves_the_callers_tensors_untouched(calib):
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 6, 5),)
    samples = calibration(inputs, 3) if calib == "given" else None
    before = [inputs[0].clone()] + [s[0].clone() for s in samples or []]
    lower(ChangesItsInput().eval(), inputs, samples, reference=True)
    assert all(torch.equal(a, b) for a, b in zip(before, [inputs[0]] + [s[0] for s in samples or []]))


@pytest.mark.parametrize("s", [-1.5, 2.0, 0.25, -30.0], ids=["as_calibrated", "positive", "small", "large"])
def test_zero_dim_input_scale_stays_float(s):
    """Calibrated on one value of the scalar (-1.5), run with others: the mul stays float on the CPU."""
    torch.manual_seed(0)
    model, inputs = ScaledByInput().eval(), (torch.randn(1, 3, 7, 6), torch.tensor(-1.5))
    r = lower(model, inputs, reference=True)
    x = (inputs[0], torch.tensor(s))
    out = run(r.pte, list(x))[0]
    with torch.no_grad():
        ref = r.quantized_model(*x)
    dq = next(n for n in r.quantized_model.graph.nodes if n.op == "call_function" and "dequantize" in str(n.target)
              and any("mul" in str(u.target) for u in n.users))
    step = float(dq.args[1]) * abs(s)  # one step of the int8 conv output, scaled by s
    assert float((out - ref).abs().max()) <= step * 1.001
    # the reference itself follows the float model: the scalar was not clamped to its calibrated range
    with torch.no_grad():
        assert float((ref - model(*x)).abs().max() / model(*x).abs().max()) < 0.05


def test_empty_calibration_is_refused():
    with pytest.raises(LoweringError, match="calibration needs at least one sample"):
        lower(Net().eval(), (torch.randn(1, 3, 6, 5),), [], reference=True)


def test_already_quantized_model_is_refused_not_aborted():
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 6, 5),)
    quantized = lower(Net().eval(), inputs, reference=True).quantized_model
    with pytest.raises(LoweringError, match="already quantized.*quantize_model=False"):
        lower(quantized, inputs, reference=True)
    assert lower(quantized, inputs, quantize_model=False, reference=True).report.partitions  # as is: it lowers


class WritesBuffer(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.conv, self.how = nn.Conv2d(3, 4, 3), how
        self.register_buffer("stat", torch.zeros(4))

    def forward(self, x):
        y = self.conv(x)
        if self.how == "index":
            self.stat[0] = y.mean()
        elif self.how == "slice":
            self.stat[1:3] = y.amax()
        else:
            self.stat.view(2, 2)[0].add_(1)
        return y


@pytest.mark.parametrize("how", ["index", "slice", "view"])
def test_buffer_written_through_a_view_is_refused(how):
    with pytest.raises(LoweringError, match="updates buffer\\(s\\) stat"):
        lower(WritesBuffer(how).eval(), (torch.randn(1, 3, 6, 5),), reference=True)

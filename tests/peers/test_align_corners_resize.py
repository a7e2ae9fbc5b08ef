"""Issue 36: a bilinear x2 upsampling with align_corners=True (n -> 2n per axis), which Vela refuses to resize, runs
on Ethos-U NPUs as passes/align_corners_resize_to_linear.py writes it (a linear per axis with exact int8 weights,
sharing the input's quantization).

References: the rewritten graph against PyTorch's F.interpolate in float; the lowered .pte (ExecuTorch's runtime,
host Ethos-U back end) against PyTorch's quantized resize, i.e. F.interpolate of the dequantized int8 input,
quantized with the input's parameters (a quantized resize shares them), within 1 step on every output, over sizes
with distinct H and W and random data, on imx93 (Ethos-U65) and ethos-u55-128."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron import lower
from executorch_neutron.passes.pipeline import PassContext, run_passes
from executorch_neutron.runtime import run
from executorch_neutron.target import ETHOS_U, NEUTRON
from harness import model_output_qparams, quantize_np, steps

aten = torch.ops.aten


class Up(nn.Module):
    def __init__(self, size=None, scale=2.0):
        super().__init__()
        self.size, self.scale = size, scale

    def forward(self, x):
        if self.size is not None:
            return F.interpolate(x, size=self.size, mode="bilinear", align_corners=True)
        return F.interpolate(x, scale_factor=self.scale, mode="bilinear", align_corners=True)


#: name -> (model, input shape [N, C, H, W])
SHAPES = {
    "x2_4x5": (Up(), (1, 3, 4, 5)),
    "x2_7x6": (Up(), (1, 8, 7, 6)),
    "x2_10x13": (Up(), (1, 4, 10, 13)),
    "x2_3x9_batch2": (Up(), (2, 5, 3, 9)),
    "size_5x11_from_4x4": (Up(size=(5, 11)), (1, 2, 4, 4)),
    "down_8x9_to_4x5": (Up(size=(4, 5)), (1, 3, 8, 9)),  # ExecuTorch's backend suite: scale 3/7 with align_corners
}


def _rewritten(model, x, backend):
    return run_passes(torch.export.export(model, x, strict=False).module(), PassContext(backend=backend))


def _targets(gm) -> set:
    return {n.target for n in gm.graph.nodes if n.op == "call_function"}


@pytest.mark.fast
@pytest.mark.parametrize("name", SHAPES)
def test_the_rewritten_graph_computes_what_pytorch_does(name):
    model, shape = SHAPES[name]
    x = (torch.randn(*shape, generator=torch.Generator().manual_seed(1)),)
    gm = _rewritten(model, x, ETHOS_U)
    assert aten.upsample_bilinear2d.vec not in _targets(gm) and aten.linear.default in _targets(gm)
    torch.testing.assert_close(gm(*x), model(*x), atol=1e-5, rtol=1e-5)


@pytest.mark.fast
@pytest.mark.parametrize("backend, model, shape", [
    (NEUTRON, Up(), (1, 3, 4, 5)),  # Neutron resizes by 2, 4 or 8 itself, or says why not
    (ETHOS_U, Up(size=(7, 9)), (1, 3, 4, 5)),  # (7 - 1) / (4 - 1) = (9 - 1) / (5 - 1) = 2: Vela resizes it
    (ETHOS_U, Up(size=(1, 3)), (1, 3, 4, 5)),  # to size 1
])
def test_left_alone(backend, model, shape):
    gm = _rewritten(model, (torch.randn(*shape),), backend)
    assert aten.upsample_bilinear2d.vec in _targets(gm)


def _input_qparams(quantized_model) -> tuple[float, int]:
    q = next(n for n in quantized_model.graph.nodes if n.op == "call_function" and
             n.target == torch.ops.quantized_decomposed.quantize_per_tensor.default)
    return float(q.args[1]), int(q.args[2])


@pytest.mark.parametrize("target", ["imx93", "ethos-u55-128"])
@pytest.mark.parametrize("name", SHAPES)
def test_on_the_npu_within_one_step_of_pytorch(name, target):
    model, shape = SHAPES[name]
    g = torch.Generator().manual_seed(sum(shape))
    calib = [(torch.randn(*shape, generator=g) * 2 + 0.3,) for _ in range(6)]
    r = lower(model.eval(), calib[0], calib, target=target)
    assert not r.report.rejections, str(r.report)
    assert "aten.upsample_bilinear2d.vec" not in r.report.delegated_ops
    assert r.report.delegated_ops.get("aten.linear.default") == 2, str(r.report)  # one per axis
    si, zi = _input_qparams(r.quantized_model)
    assert model_output_qparams(r.quantized_model) == [(si, zi)]  # shared, as a quantized resize's
    worst = 0
    for (x,) in calib + [(torch.randn(*shape, generator=g) * 3,) for _ in range(8)]:  # some past the range
        xq = torch.tensor((np.clip(np.round(x.numpy() / si) + zi, -128, 127) - zi) * si, dtype=torch.float32)
        ref = quantize_np(model(xq).numpy(), si, zi)
        out = quantize_np(run(r.pte, (x,))[0].numpy(), si, zi)
        assert out.shape == ref.shape
        worst = max(worst, int(steps(out, ref).max()))
    assert worst <= 1, f"{worst} steps"

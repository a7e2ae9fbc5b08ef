"""imxrt700cm: Neutron takes what it can, ExecuTorch's Cortex-M backend turns the typical MCU leftovers into int8
cortex_m::* kernels, and the .pte runs on the host (our host kernels) within 1 output step of PyTorch's quantized
model (`convert_pt2e` of the one composed quantizer) per op.

Leftovers come from Neutron's own constraints (a 10-class softmax under the documented operator table,
`constraints="documented"`; sqrt: no Neutron kernel; a stride-3 transposed convolution) or from
`operators_not_to_delegate`, the user's way to keep an op off the NPU (a residual add, a mul, a max pool, a
sigmoid). What the Cortex-M backend cannot take (sin; a linear with per-channel weights) stays float and
the report says why.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.pte import inspect_pte
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration
from harness import Fn, compare_pte, lower_and_run, pte_steps

F = nn.functional
BOUNDARY = {"cortex_m::quantize_per_tensor.out", "cortex_m::dequantize_per_tensor.out"}


def _softmax_head():
    return Fn(lambda s, x: torch.softmax(s.mods[1](torch.relu(s.mods[0](x)).mean((2, 3))), -1),
              nn.Conv2d(3, 16, 3), nn.Linear(16, 10)), (torch.randn(1, 3, 9, 7),), {"constraints": "documented"}


def _sqrt_mlp():  # (GELU now runs on the NPU: passes/gelu_to_sigmoid.py)
    return Fn(lambda s, x: s.mods[1](torch.sqrt(torch.relu(s.mods[0](x)))), nn.Linear(12, 24), nn.Linear(24, 8)), \
        (torch.randn(2, 12),), {}


def _residual_add():
    return Fn(lambda s, x: torch.relu(s.mods[0](x)) + s.mods[1](x), nn.Conv2d(8, 8, 3, padding=1),
              nn.Conv2d(8, 8, 1)), (torch.randn(1, 8, 6, 5),), {"operators_not_to_delegate": ("aten.add.Tensor",)}


def _gated_mul():
    return Fn(lambda s, x: s.mods[0](x) * torch.sigmoid(s.mods[1](x)), nn.Conv2d(4, 8, 1), nn.Conv2d(4, 8, 1)), \
        (torch.randn(1, 4, 5, 6),), {"operators_not_to_delegate": ("aten.mul.Tensor",)}


def _max_pool():
    return Fn(lambda s, x: F.max_pool2d(s.mods[0](x), 2), nn.Conv2d(3, 8, 3)), (torch.randn(1, 3, 9, 7),), \
        {"operators_not_to_delegate": ("aten.max_pool2d.default", "aten.max_pool2d_with_indices.default")}


def _sigmoid_head():
    return Fn(lambda s, x: torch.sigmoid(s.mods[0](x)), nn.Linear(6, 10)), (torch.randn(2, 6),), \
        {"operators_not_to_delegate": ("aten.sigmoid.default",)}


def _conv_relu():
    return Fn(lambda s, x: torch.relu(s.mods[0](x)), nn.Conv2d(3, 8, 3, padding=1)), (torch.randn(1, 3, 9, 7),), \
        {"operators_not_to_delegate": ("aten.convolution.default",)}


def _depthwise():
    return Fn(lambda s, x: s.mods[1](torch.relu(s.mods[0](x))), nn.Conv2d(3, 8, 1),
              nn.Conv2d(8, 8, 3, groups=8, padding=1)), (torch.randn(1, 3, 10, 7),), \
        {"operators_not_to_delegate": ("aten.convolution.default",)}


def _avg_pool():
    return Fn(lambda s, x: F.avg_pool2d(s.mods[0](x), 2), nn.Conv2d(3, 8, 3)), (torch.randn(1, 3, 9, 7),), \
        {"operators_not_to_delegate": ("aten.avg_pool2d.default",)}


def _upsample_stride3():
    return Fn(lambda s, x: s.mods[0](x), nn.ConvTranspose2d(4, 8, 3, stride=3)), (torch.randn(1, 4, 5, 6),), {}


# name -> (factory, CPU op, the cortex_m kernel it must become)
INT8_LEFTOVERS = {
    "softmax_10_classes": (_softmax_head, "aten._softmax.default", "cortex_m.softmax"),
    "sqrt": (_sqrt_mlp, "aten.sqrt.default", "cortex_m.quantized_activation"),
    "residual_add": (_residual_add, "aten.add.Tensor", "cortex_m.quantized_add"),
    "gated_mul": (_gated_mul, "aten.mul.Tensor", "cortex_m.quantized_mul"),
    "max_pool": (_max_pool, "aten.max_pool2d_with_indices.default", "cortex_m.quantized_max_pool2d"),
    "sigmoid": (_sigmoid_head, "aten.sigmoid.default", "cortex_m.quantized_activation"),
    "conv_relu": (_conv_relu, "aten.convolution.default", "cortex_m.quantized_conv2d"),
    "depthwise_conv": (_depthwise, "aten.convolution.default", "cortex_m.quantized_depthwise_conv2d"),
    "avg_pool": (_avg_pool, "aten.avg_pool2d.default", "cortex_m.quantized_avg_pool2d"),
    "transposed_conv_stride_3": (_upsample_stride3, "aten.convolution.default", "cortex_m.quantized_transpose_conv2d"),
}


def _calibration(inputs, n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [inputs] + [tuple(torch.randn(t.shape, generator=g) for t in inputs) for _ in range(n)]


def _output_scale(quantized_model) -> float:
    """Scale of the dequantize that produces the model's (first) output in PyTorch's quantized model."""
    out = next(n for n in quantized_model.graph.nodes if n.op == "output").args[0]
    out = out[0] if isinstance(out, (tuple, list)) else out
    return float(out.args[1])


def _lower_and_run(factory, target="imxrt700cm"):
    torch.manual_seed(0)
    module, inputs, options = factory()
    result = lower(module.eval(), inputs, _calibration(inputs), target=target, **options)
    got = run(result.pte, list(inputs))[0]
    with torch.no_grad():
        ref = result.quantized_model(*inputs)
    steps = ((got - ref).abs() / _output_scale(result.quantized_model)).round().max().item()
    return result, steps


@pytest.mark.parametrize("case", INT8_LEFTOVERS.values(), ids=INT8_LEFTOVERS.keys())
def test_leftover_becomes_cortex_m_int8_kernel(case):
    factory, op, kernel = case
    result, steps = _lower_and_run(factory)
    report = result.report
    kernels_of_op = {report.cortex_m_kernels[r.node] for r in report.cortex_m_rejections if r.op == op}
    assert kernel in kernels_of_op, str(report)
    assert report.float_rejections == [], str(report)
    kernels = inspect_pte(result.pte).methods[0].cpu_kernels
    assert all(k.startswith("cortex_m::") for k in kernels), kernels  # no float compute left on the CPU
    assert kernels["cortex_m::quantize_per_tensor.out"] == 1 and kernels["cortex_m::dequantize_per_tensor.out"] == 1
    assert steps <= 1, f"{steps} output steps from PyTorch's quantized model"


def test_report_shows_three_groups_with_reasons():
    """sin: no Cortex-M int8 kernel (and no Neutron one); linear with per-channel weights: refused by the Cortex-M passes."""
    model = Fn(lambda s, x: torch.softmax(s.mods[1](torch.sin(s.mods[0](x))), -1),
               nn.Linear(16, 24), nn.Linear(24, 10))
    result, steps = _lower_and_run(lambda: (model, (torch.randn(2, 16),),
                                            {"operators_not_to_delegate": ("aten.linear.default",),
                                             "constraints": "documented"}))
    report = result.report
    assert {r.op for r in report.cortex_m_rejections} == {"aten._softmax.default"}
    floats = {r.op: report.float_reason(r) for r in report.float_rejections}
    assert set(floats) == {"aten.sin.default", "aten.linear.default"}
    assert "no int8 cortex-m33 kernel" in floats["aten.sin.default"]
    assert "refused it" in floats["aten.linear.default"] and "weight" in floats["aten.linear.default"]
    text = str(report)
    assert "On the cortex-m33, int8" in text and "On the CPU, float" in text and "as int8 cortex-m33 kernels" in text
    data = report.to_dict()
    assert data["totals"]["cortex_m_nodes"] == 1 and data["totals"]["cpu_float_nodes"] == 3
    assert steps <= 2, f"{steps} output steps (three float ops and a softmax in a row: 2 steps allowed)"


def test_imxrt700_keeps_the_same_leftovers_float():
    """The Neutron-only target: same partitions, leftovers are portable float kernels."""
    result, steps = _lower_and_run(_softmax_head, target="imxrt700")
    assert result.report.cortex_m_core is None and len(result.report.float_rejections) == 1
    assert not any(k.startswith("cortex_m::") for k in inspect_pte(result.pte).methods[0].cpu_kernels)
    assert steps <= 1


def test_one_set_of_qparams_at_npu_cortex_m_boundaries():
    """Neutron annotates conv+relu, Cortex-M the sqrt after it: the tensor between them is quantized once."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from executorch_neutron.quantizer import NeutronCortexMQuantizer
    from executorch_neutron.quantizer.composed import QUANTIZED_BY

    model = Fn(lambda s, x: torch.sqrt(torch.relu(s.mods[0](x))), nn.Conv2d(3, 8, 3)).eval()
    x = torch.randn(1, 3, 7, 6)
    prepared = prepare_pt2e(torch.export.export(model, (x,), strict=False).module(), NeutronCortexMQuantizer())
    by = {n.name: n.meta.get(QUANTIZED_BY) for n in prepared.graph.nodes if n.op == "call_function"}
    assert by.get("sqrt") == "cortex_m" and by.get("conv2d") is None  # Neutron took the conv, Cortex-M the sqrt
    prepared(x)
    quantized = convert_pt2e(prepared)
    q_nodes = [n for n in quantized.graph.nodes if "quantize_per_tensor" in str(n.target)
               and "dequantize" not in str(n.target)]
    assert len(q_nodes) == 3  # model input, relu output (= sqrt input), sqrt output: no requantization


def test_same_model_same_bytes():
    module, inputs, _ = _softmax_head()
    module.eval()
    calib = _calibration(inputs)
    assert lower(module, inputs, calib, target="imxrt700cm").pte == lower(module, inputs, calib,
                                                                          target="imxrt700cm").pte


def _ds_cnn_softmax():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import ds_cnn

    model, inputs = ds_cnn.factory()[:2]
    return Fn(lambda s, x: torch.softmax(s.mods[0](x), -1), model), inputs, {"constraints": "documented"}


def _transformer_ffn():
    return Fn(lambda s, x: torch.softmax(s.mods[2](x + s.mods[1](F.gelu(s.mods[0](x)))), -1),
              nn.Linear(32, 64), nn.Linear(64, 32), nn.Linear(32, 10)), (torch.randn(4, 32),), \
        {"constraints": "documented"}  # the 10-class softmax for the Cortex-M (GELU runs on the NPU)


MODELS = {"ds_cnn_12_class_softmax": _ds_cnn_softmax, "transformer_ffn_gelu_softmax": _transformer_ffn}


@pytest.mark.parametrize("factory", MODELS.values(), ids=MODELS.keys())
def test_whole_models_match_pytorch_quantized_model(factory):
    """Whole models: NPU partitions (LiteRT reference kernels on the host) + Cortex-M kernels, on inputs other
    than the calibration data. Bound: 1 output step; the NPU partitions' int8 kernels may round one step away
    from PyTorch's fake-quantized arithmetic, which a softmax head does not amplify (measured: 0 here)."""
    result, _ = _lower_and_run(factory)
    assert result.report.float_rejections == [] and result.report.cortex_m_rejections
    _, inputs, _ = factory()
    scale = _output_scale(result.quantized_model)
    for seed in range(3):
        g = torch.Generator().manual_seed(100 + seed)
        x = tuple(torch.randn(t.shape, generator=g) for t in inputs)
        got = run(result.pte, list(x))[0]
        with torch.no_grad():
            ref = result.quantized_model(*x)
        assert ((got - ref).abs() / scale).round().max().item() <= 1


def test_circular_padding_runs_on_imxrt700cm():
    """Left to ExecuTorch's decomposition, a circular pad became float copies whose Q/DQ the Cortex-M stage folded
    away: the .pte fed float data to the int8 delegate (error 0x12). Now slices + cat on the NPU: the .pte runs,
    within 1 step of PyTorch's quantized model."""
    torch.manual_seed(0)
    model = nn.Conv2d(3, 6, 3, padding=1, padding_mode="circular").eval()
    inputs = (torch.randn(2, 3, 9, 7),)
    r = lower_and_run(model, inputs, target="imxrt700cm")
    assert r.rejections == [], [j.message() for j in r.rejections]
    assert int(compare_pte(r, model, [inputs, (torch.randn(2, 3, 9, 7),)]).steps.max()) <= 1


def test_a_cortex_m_result_feeding_a_delegate_is_made_contiguous():
    """A Cortex-M kernel (here the average pool Neutron refuses: padding that is not SAME) leaves its result
    channels-last; the Neutron partition after it (the squeeze back to 1-D) was compiled for a contiguous input and
    its .pte failed to run (error 0x12). A dim-order copy in front of the delegate fixes it: the .pte runs, within
    1 step of PyTorch's quantized model."""
    torch.manual_seed(0)
    model = nn.AvgPool1d(2, 2, 1, count_include_pad=False).eval()
    x = (torch.randn(1, 8, 100),)
    result = lower(model, x, [x] + calibration(x, 4), target="imxrt700cm")
    assert any(p.ops for p in result.report.partitions), result.report
    assert pte_steps(result, [x]) <= 1

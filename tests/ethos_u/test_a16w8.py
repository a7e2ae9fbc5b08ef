"""A16W8 (int16 activations, int8 weights) on Ethos-U: per operator, the host run of the .pte is within one int16
output step of PyTorch's quantized model with the same qparams, the partition's TFLite is TFLite's 16x8 form, and
the payload equals what ExecuTorch's Arm flow (`arm_vela.vela_compile`) makes of the same TFLite; int8 and int16
layers mix per module; what Vela (or the converter, or LiteRT) takes in int8 only is quantized int8 under an int16
setting (global or explicit) and runs on the NPU, noted in the report ("kept int8: <why>"); an int16 node of it from
a quantizer that does not know stays on the CPU with Vela's reason (and Vela itself refuses it); Neutron targets
refuse int16 in one line.

References: PyTorch's quantized model (`convert_pt2e`) for the numbers, ExecuTorch's `vela_compile` for the
payload bytes, Vela itself for what it refuses, the float model for the SQNR sanity check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io

import numpy as np
import pytest
import torch
from ai_edge_litert.interpreter import Interpreter
from torch import nn

from executorch_neutron import lower
from executorch_neutron.ethos_u.vela_call import VelaError
from executorch_neutron.models import zoo
from executorch_neutron.ops import registry
from executorch_neutron.quantizer import NeutronQuantizer
from executorch_neutron.runtime import run
from harness import Fn, model_output_qparams


def _calibration(inputs):
    return [inputs] + zoo.calibration(inputs, 4)


def _steps(out: torch.Tensor, ref: torch.Tensor, scale: float, zp: int) -> int:
    """Largest difference of two dequantized outputs, in output quantization steps."""
    q = lambda t: np.round(t.detach().numpy().astype(np.float64) / scale) + zp  # noqa: E731
    return int(np.abs(q(out) - q(ref)).max())


def _lower16(module, inputs, target, tmp_path, quantizer=None):
    quantizer = quantizer or NeutronQuantizer(target, activations="int16")
    return lower(module.eval(), inputs, _calibration(inputs), target=target, quantizer=quantizer,
                 intermediates_dir=tmp_path)


def _tensor_types(tflite: bytes) -> dict[str, str]:
    it = Interpreter(model_content=tflite)
    return {d["name"]: d["dtype"].__name__ for d in it.get_tensor_details()}


def _vela_bytes(tflite: bytes, flags) -> bytes:
    from executorch.backends.arm.arm_vela import vela_compile

    with contextlib.redirect_stdout(io.StringIO()):
        return vela_compile(tflite, list(flags)).processed_bytes


class _AddMM(nn.Module):
    """torch.addmm with a constant matrix: FULLY_CONNECTED (int64 bias), like linear."""

    def __init__(self):
        super().__init__()
        self.w, self.b = nn.Parameter(torch.randn(12, 10)), nn.Parameter(torch.randn(10))

    def forward(self, x):
        return torch.addmm(self.b, x * 2.0, self.w)


#: distinct H, W, C extents: a wrong permutation cannot pass by accident
CASES = {
    "conv": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1)), (1, 3, 9, 7), "aten.convolution.default"),
    "conv_relu": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU()), (1, 3, 11, 9),
                  "aten.convolution.default"),
    "depthwise": (lambda: nn.Conv2d(8, 8, 3, groups=8), (1, 8, 10, 6), "aten.convolution.default"),
    "linear": (lambda: nn.Linear(12, 10), (1, 5, 12), "aten.linear.default"),
    "addmm": (_AddMM, (5, 12), "aten.addmm.default"),
    "add": (lambda: Fn(lambda self, x, y: x + y), [(1, 4, 5, 7), (1, 4, 5, 7)], "aten.add.Tensor"),
    "add_broadcast": (lambda: Fn(lambda self, x, y: x + y), [(1, 4, 5, 7), (1, 4, 1, 7)], "aten.add.Tensor"),
    "mul": (lambda: Fn(lambda self, x, y: x * y), [(1, 4, 5, 7), (1, 4, 5, 7)], "aten.mul.Tensor"),
    "mul_scalar": (lambda: Fn(lambda self, x: (x * x) * 0.75), (1, 4, 5, 7), "aten.mul.Tensor"),
    "sub": (lambda: Fn(lambda self, x, y: x - y), [(1, 4, 5, 7), (1, 4, 5, 7)], "aten.sub.Tensor"),
    "relu": (lambda: nn.ReLU(), (1, 6, 5, 7), "aten.relu.default"),
    "clamp": (lambda: Fn(lambda self, x: (x * x).clamp(-1.0, 2.0)), (1, 6, 5, 7), "aten.clamp.default"),
    "relu6": (lambda: nn.ReLU6(), (1, 6, 5, 7), "aten.hardtanh.default"),
    "max_pool": (lambda: nn.MaxPool2d(2), (1, 6, 8, 10), "aten.max_pool2d_with_indices.default"),
    "avg_pool": (lambda: nn.AvgPool2d(3, stride=2), (1, 6, 9, 11), "aten.avg_pool2d.default"),
    "mean_hw": (lambda: Fn(lambda self, x: x.mean(dim=(2, 3), keepdim=True)), (1, 6, 5, 7), "aten.mean.dim"),
    "global_avg_pool": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d(1)), (1, 3, 9, 7),
                        "aten.mean.dim"),
    "mean_last": (lambda: Fn(lambda self, x: (x * x).mean(dim=-1, keepdim=True)), (1, 6, 5, 7), "aten.mean.dim"),
    "slice": (lambda: Fn(lambda self, x: (x * x)[:, 1:5, :, 2:]), (1, 6, 5, 7), "aten.slice_copy.Tensor"),
    "pad": (lambda: Fn(lambda self, x: torch.nn.functional.pad(x * x, (1, 2, 0, 1))), (1, 6, 5, 7),
            "aten.constant_pad_nd.default"),
    "concat": (lambda: Fn(lambda self, x: torch.cat([x, x * 2.0], dim=1)), (1, 5, 6, 7), "aten.cat.default"),
    "reshape": (lambda: Fn(lambda self, x: (x.reshape(1, 6, 35) * x.reshape(1, 6, 35))), (1, 6, 5, 7),
                "aten.view_copy.default"),
    "permute": (lambda: Fn(lambda self, x: (x * x).permute(0, 2, 1)), (1, 6, 9), "aten.permute_copy.default"),
    "sigmoid": (lambda: nn.Sigmoid(), (1, 6, 5, 7), "aten.sigmoid.default"),
    "tanh": (lambda: nn.Tanh(), (1, 6, 5, 7), "aten.tanh.default"),
    "softmax": (lambda: nn.Softmax(dim=-1), (1, 3, 10), "aten._softmax.default"),
    "leaky_relu": (lambda: nn.LeakyReLU(0.1), (1, 6, 5, 7), "aten.leaky_relu.default"),
    "abs": (lambda: Fn(lambda self, x: torch.abs(x * x - 2.0)), (1, 6, 5, 7), "aten.abs.default"),
    "neg": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), Fn(lambda self, x: -x)), (1, 3, 7, 9), "aten.neg.default"),
    "maximum": (lambda: Fn(lambda self, x, y: torch.maximum(x, y)), [(1, 4, 5, 7), (1, 4, 5, 7)],
                "aten.maximum.default"),
    "minimum": (lambda: Fn(lambda self, x, y: torch.minimum(x, y)), [(1, 4, 5, 7), (1, 4, 1, 7)],
                "aten.minimum.default"),
    "div": (lambda: Fn(lambda self, x: (x * x) / 3.0), (1, 6, 5, 7), "aten.mul.Tensor"),
    "exp": (lambda: Fn(lambda self, x: torch.exp(x * 0.3)), (1, 6, 5, 7), "aten.exp.default"),
    "sum": (lambda: Fn(lambda self, x: (x * x).sum(dim=-1, keepdim=True)), (1, 6, 5, 7), "aten.sum.dim_IntList"),
    "amax": (lambda: Fn(lambda self, x: (x * x).amax(dim=-1, keepdim=True)), (1, 6, 5, 7), "aten.amax.default"),
    "amin": (lambda: Fn(lambda self, x: (x * x).amin(dim=-1, keepdim=True)), (1, 6, 5, 7), "aten.amin.default"),
    "resize_nearest": (lambda: nn.Upsample(scale_factor=2, mode="nearest"), (1, 4, 5, 7),
                       "aten.upsample_nearest2d.vec"),
    "resize_bilinear": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 4, 5, 7),
                        "aten.upsample_bilinear2d.vec"),
    "reflection_pad": (lambda: Fn(lambda self, x: torch.nn.functional.pad(x * x, (1, 2, 2, 1), mode="reflect")),
                       (1, 6, 5, 7), "aten.pad.default"),
    "transposed_conv": (lambda: nn.ConvTranspose2d(4, 6, 2, stride=2), (1, 4, 5, 7), "aten.convolution.default"),
}
#: wider bounds, in steps of 1/32768 (measured): LiteRT's int16 TANH and SOFTMAX kernels compute tanh, exp and the
#: reciprocal by interpolating lookup tables, not exactly as PyTorch's float function then rounding (the int8
#: kernels round within 1 step of 1/128 or 1/256): 2 steps = 6e-5 (tanh) and 4 steps = 1.2e-4 (softmax) absolute;
#: its int16 EXP likewise interpolates a table: 3 steps of the output's scale (measured 6.6e-4 here: 2e-3 absolute
#: on outputs up to about 20, 1e-4 relative)
WIDER = {"tanh": 2, "softmax": 4, "exp": 3}


@pytest.mark.parametrize("target", ["imx93", "ethos-u55-128"])
@pytest.mark.parametrize("name", CASES)
def test_int16_op_within_one_step_and_payload_equals_arm_vela(name, target, tmp_path):
    make, shape, op = CASES[name]
    torch.manual_seed(0)
    inputs = tuple(torch.randn(*s) * 3 for s in (shape if isinstance(shape, list) else [shape]))
    result = _lower16(make(), inputs, target, tmp_path)
    report = result.report
    assert report.rejections == [] and len(report.partitions) == 1, str(report)
    assert op in dict(report.delegated_ops), str(report)
    part = report.partitions[0]
    tflite = (tmp_path / f"{part.tag}.tflite").read_bytes()
    types = _tensor_types(tflite)
    assert types[next(iter(types))] == "int16" and "int8" not in {t for n, t in types.items() if not n.endswith("_w")}
    assert part.blob == _vela_bytes(tflite, part.backend["vela_flags"])
    out = run(result.pte, inputs)[0]
    with torch.no_grad():
        ref = result.quantized_model(*inputs)
    scale, zp = model_output_qparams(result.quantized_model)[0]
    assert zp == 0 and scale < 1e-2, (scale, zp)  # an int16 output (symmetric)
    assert _steps(out, ref, scale, zp) <= WIDER.get(name, 1)


class _Mixed(nn.Module):
    """int8 stem, int16 middle (set_module_name), int8 head: requantizations int8 -> int16 -> int8."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.middle = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU(), nn.Conv2d(8, 12, 1))
        self.head = nn.Conv2d(12, 6, 3)

    def forward(self, x):
        return self.head(self.middle(self.stem(x)))


@pytest.mark.parametrize("target", ["imx93", "ethos-u55-128"])
def test_mixed_int8_int16_layers(target, tmp_path):
    torch.manual_seed(1)
    inputs = (torch.randn(1, 3, 11, 9),)
    quantizer = NeutronQuantizer(target).set_module_name("middle", "int16")
    result = _lower16(_Mixed(), inputs, target, tmp_path, quantizer)
    report = result.report
    assert report.rejections == [] and len(report.partitions) == 1, str(report)
    part = report.partitions[0]
    tflite = (tmp_path / f"{part.tag}.tflite").read_bytes()
    types = _tensor_types(tflite)
    assert types[next(iter(types))] == "int8" and "int16" in types.values()
    ops = [o["op_name"] for o in Interpreter(model_content=tflite)._get_ops_details()]
    assert ops.count("QUANTIZE") == 2, ops  # int8 -> int16 into the middle, int16 -> int8 out of it
    assert part.blob == _vela_bytes(tflite, part.backend["vela_flags"])
    out = run(result.pte, inputs)[0]
    with torch.no_grad():
        ref = result.quantized_model(*inputs)
    scale, zp = model_output_qparams(result.quantized_model)[0]
    assert _steps(out, ref, scale, zp) <= 1


def _hardswish_model():
    """The int8 hardswish is the model's output: its int8 steps are the ones compared (an int16 layer after it would
    scale one int8 step of it into hundreds of int16 output steps)."""
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.Hardswish())


def _bmm_model():
    return Fn(lambda self, x, y: torch.bmm(x * 2.0, y))


#: Vela's int8-only operators: (model, inputs, the ATen op, the edge op, the TFLite operator Vela names)
INT8_ONLY = {
    "hardswish": (_hardswish_model, [(1, 3, 9, 7)], "aten.hardswish.default", "HARD_SWISH"),
    "bmm": (_bmm_model, [(2, 5, 12), (2, 12, 7)], "aten.bmm.default", "BATCH_MATMUL"),
}


def _random(shapes):
    torch.manual_seed(3)
    return tuple(torch.randn(*s) for s in shapes)


@pytest.mark.parametrize("explicit", [False, True], ids=["global", "explicit_rule"])
@pytest.mark.parametrize("name", INT8_ONLY)
def test_vela_int8_only_op_is_kept_int8_on_the_npu_with_a_note(name, explicit, tmp_path):
    """Under a global int16 setting, or an explicit int16 rule on the op itself, an op Vela compiles in int8 only is
    quantized int8 (requantizations around it) and runs on the NPU; the report notes why; the numbers are within 1
    step of PyTorch's quantized model."""
    make, shapes, op, vela_op = INT8_ONLY[name]
    inputs = _random(shapes)
    quantizer = NeutronQuantizer("ethos-u55-128", activations="int16")
    if explicit:
        quantizer = NeutronQuantizer("ethos-u55-128").set_operator_type(op.rsplit(".", 1)[0], "int16")
    result = _lower16(make(), inputs, "ethos-u55-128", tmp_path, quantizer)
    report = result.report
    assert report.rejections == [] and len(report.partitions) == 1, str(report)
    assert dict(report.delegated_ops).get(op) == 1, str(report)
    notes = [n for n in report.precision_notes.values() if n.startswith("kept int8")]  # beside the int16 nodes' notes
    assert len(notes) == 1 and notes[0].startswith("kept int8: Vela") and vela_op in notes[0], notes
    assert "kept int8: Vela" in str(report) and "kept int8: Vela" in report.to_json()
    part = report.partitions[0]
    tflite = (tmp_path / f"{part.tag}.tflite").read_bytes()
    ops = {o["op_name"]: o for o in Interpreter(model_content=tflite)._get_ops_details()}
    types = {d["index"]: d["dtype"].__name__ for d in Interpreter(model_content=tflite).get_tensor_details()}
    assert {types[i] for i in ops[vela_op]["inputs"] if i >= 0} <= {"int8", "int32"}, types
    assert part.blob == _vela_bytes(tflite, part.backend["vela_flags"])
    out = run(result.pte, inputs)[0]
    with torch.no_grad():
        ref = result.quantized_model(*inputs)
    scale, zp = model_output_qparams(result.quantized_model)[0]
    # global: two ops, each within 1 step: the int16 -> int8 requantization (QUANTIZE) in front of the op, then the
    # op (measured: 2 on hardswish, whose slope reaches 1.5); explicit: the model is int8 throughout, one op
    assert _steps(out, ref, scale, zp) <= (1 if explicit else 2)


def test_int16_hardswish_from_an_unaware_quantizer_stays_on_cpu_with_vela_reason(tmp_path, monkeypatch):
    """An int16 hardswish the quantizer did not keep int8 (here: its fallback switched off) stays on the CPU, and
    the CPU pieces ExecuTorch decomposes it into carry Vela's rule, not only "part of aten.hardswish.default"."""
    from executorch_neutron.quantizer import patterns

    monkeypatch.setattr(patterns, "kept_int8", lambda node, ctx: None)
    result = _lower16(_hardswish_model(), _random([(1, 3, 9, 7)]), "ethos-u55-128", tmp_path)
    report = result.report
    assert "aten.hardswish.default" not in dict(report.delegated_ops), str(report)
    assert not [n for n in report.precision_notes.values() if n.startswith("kept int8")]
    vela = [r for r in report.rejections if "IFM must be int8 or uint8 (HARD_SWISH)" in r.reason]
    assert vela and {r.op for r in vela} >= {"aten.hardswish.default", "aten.add.Tensor"}, str(report)


@pytest.mark.parametrize("name", INT8_ONLY)
def test_vela_itself_refuses_the_int16_op_with_the_rule_we_register(name, tmp_path, monkeypatch):
    """Without our int8-only record (the entry's int16 flag forced, the quantizer's fallback off), Vela refuses the
    int16 operator; the record we register is Vela's own rule."""
    from executorch_neutron.ethos_u import constraints as vela_limits
    from executorch_neutron.quantizer import patterns

    make, shapes, op, vela_op = INT8_ONLY[name]
    entry = next(e for e in registry.entries() if e.name == op)
    ours = [why for ops, why in vela_limits.INT8_ONLY if entry.targets[0] in ops]
    assert len(ours) == 1 and ours[0].startswith("Vela: ") and registry.int16_refusal(entry.targets[0], "ethos-u") == ours[0]
    for target in entry.targets:
        monkeypatch.setitem(registry.REGISTRY, target, dataclasses.replace(entry, int16=True))
    monkeypatch.setattr(registry, "INT8_ONLY", {})
    monkeypatch.setattr(vela_limits, "INT8_ONLY", ())  # lower() registers the back ends' limits again
    monkeypatch.setattr(patterns, "kept_int8", lambda node, ctx: None)
    with pytest.raises(VelaError, match=vela_op):
        _lower16(make(), _random(shapes), "ethos-u55-128", tmp_path)


@pytest.mark.fast
def test_int16_support_comes_from_the_registry():
    """Every entry without int16 says why; a back end's int8-only record is its compiler's text; the quantizer asks
    the registry with the ATen ops it annotates."""
    import torch as _t

    aten = _t.ops.aten
    for entry in registry.entries():
        why = registry.int16_refusal(entry.targets[0], "ethos-u")
        assert (why is None) == (entry.int16 and not registry.INT8_ONLY.get(entry.targets[0])), entry.name
    assert registry.int16_refusal(aten.hardswish_.default, "ethos-u").startswith("Vela: IFM must be int8")
    assert registry.int16_refusal(aten.conv2d.default, "ethos-u") is None
    assert registry.int16_refusal(aten.rsqrt.default, "ethos-u").startswith("LiteRT's int16 RSQRT")
    assert registry.int16_refusal(aten.sin.default, "ethos-u") is None  # not quantized at all


@pytest.mark.fast
@pytest.mark.parametrize("target", ["imxrt700", "mcxn94x", "imx95"])
def test_neutron_refuses_int16_in_one_line(target):
    with pytest.raises(ValueError) as err:
        NeutronQuantizer(target, activations="int16")
    text = str(err.value)
    assert "\n" not in text and "int16" in text and target in text and "int8" in text
    with pytest.raises(ValueError, match="int16"):
        NeutronQuantizer(target).set_module_name("head", "int16")


def test_int16_sqnr_beats_int8_on_wide_dynamic_range(tmp_path):
    """Values spanning five decades through ops without weights (int8 weights would bound both): int8's 255 levels
    lose the small ones, int16's 65535 keep them."""
    torch.manual_seed(2)
    scales = torch.logspace(-3, 2, 4).reshape(1, 4, 1, 1)
    inputs = (torch.randn(1, 4, 6, 5) * scales, torch.rand(1, 4, 6, 5) + 0.5)
    model = Fn(lambda self, x, y: torch.relu(x * y + x)).eval()
    with torch.no_grad():
        ref = model(*inputs)
    sqnr = {}
    for precision in ("int8", "int16"):
        q = NeutronQuantizer("imx93", activations=precision)
        result = _lower16(model, inputs, "imx93", tmp_path / precision, q)
        assert result.report.rejections == [], str(result.report)
        out = run(result.pte, inputs)[0]
        sqnr[precision] = 10 * torch.log10(ref.pow(2).sum() / (out - ref).pow(2).sum()).item()
    print(f"SQNR vs float: int8 {sqnr['int8']:.1f} dB, int16 {sqnr['int16']:.1f} dB")
    assert sqnr["int16"] > sqnr["int8"] + 20, sqnr

"""Per-layer precision and quantized I/O through `lower()`, the report, `inspect_pte`, the host runtime, the export
recipes and the CLI (issue 34 item 2).

References: PyTorch's own quantized model (`convert_pt2e`, `result.quantized_model`) gives the numbers and its
quantize / dequantize nodes the I/O qparams; the host runtime (ExecuTorch's runtime + LiteRT) runs the .pte;
`jsonschema` checks the JSON report against report/schema.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import torch

from executorch_neutron import lower
from executorch_neutron.pipeline import LoweringError
from executorch_neutron.pte import inspect_pte, read_pte
from executorch_neutron.quantizer.precision import KEPT_FLOAT_REASON
from executorch_neutron.report import load_schema
from executorch_neutron.runtime import run
from executorch_neutron.target import get_target
from harness import assert_within_steps, io_quant, model_output_qparams, quantize_np, run_tflite

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("imxrt700", "imx93")
MODEL = '''
import torch
from torch import nn


class TwoStage(nn.Module):
    """body: conv 3->8 3x3 + ReLU; head: conv 8->6 1x1 + sigmoid, on an 11x7 image (every extent differs)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
        self.head = nn.Sequential(nn.Conv2d(8, 6, 1), nn.Sigmoid())

    def forward(self, x):
        return self.head(self.body(x))


def factory():
    torch.manual_seed(0)
    return TwoStage().eval(), (torch.randn(1, 3, 11, 7),)
'''
_scope: dict = {}
exec(compile(MODEL, "two_stage", "exec"), _scope)


def _model_and_data(layout=torch.contiguous_format):
    model, (x,) = _scope["factory"]()
    gen = torch.Generator().manual_seed(1)
    calib = [(x,)] + [(torch.randn(x.shape, generator=gen),) for _ in range(7)]
    if layout is torch.channels_last:
        model = model.to(memory_format=torch.channels_last)
        calib = [(s.contiguous(memory_format=torch.channels_last),) for (s,) in calib]
    return model, calib


def _input_qparams(quantized_model) -> tuple[float, int]:
    """(scale, zero point) of the quantize node that reads the model's input in PyTorch's quantized model."""
    x = next(n for n in quantized_model.graph.nodes if n.op == "placeholder")
    q = next(u for u in x.users if "quantize_per_tensor" in str(u.target))
    return float(q.args[1]), int(q.args[2])


@pytest.mark.parametrize("target", (*TARGETS, "imxrt700cm"))  # imxrt700cm: no Cortex-M kernel for a float node
def test_kept_float_nodes_run_on_the_cpu_with_the_reason(target):
    model, calib = _model_and_data()
    r = lower(model, calib[0], calib, target=target, precision="head=float")
    reasons = {rej.op: rej.reason for rej in r.report.rejections}
    assert reasons == {"aten.convolution.default": KEPT_FLOAT_REASON, "aten.sigmoid.default": KEPT_FLOAT_REASON}
    assert r.report.delegated_ops["aten.convolution.default"] == 1  # the body's conv is on the NPU
    assert f": {KEPT_FLOAT_REASON}" in str(r.report)
    cpu = [n["reason"] for group in r.report.to_dict()["cpu"] for n in group["nodes"]]
    assert cpu == [KEPT_FLOAT_REASON] * 2 and r.report.cortex_m_kernels == {}
    # numbers: the float head reads the body's int8 output on both sides; one step of that output moves the result
    # by at most step * max_o sum|W_o| * max sigmoid' (1/4)
    conv_1 = next(n for n in r.quantized_model.graph.nodes if n.name == "conv2d_1")
    step = float(conv_1.args[0].args[1])
    bound = step * float(model.head[0].weight.abs().sum((1, 2, 3)).max()) / 4 + 1e-6
    for (x,) in calib[:3]:
        with torch.no_grad():
            ref = r.quantized_model(x)
        assert float((run(r.pte, [x])[0] - ref).abs().max()) <= bound


CASES = {f"{t}_{name}": (t, layout) for t in TARGETS
         for name, layout in (("contiguous", torch.contiguous_format), ("channels_last", torch.channels_last))}
CASES["imxrt700cm_contiguous"] = ("imxrt700cm", torch.contiguous_format)  # I/O step before the Cortex-M step


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_quantized_io_matches_pytorchs_quantized_model(case):
    target, layout = case
    model, calib = _model_and_data(layout)
    r = lower(model, calib[0], calib, target=target, quantized_io=True)
    q_in, q_out = r.report.quantized_io
    assert (q_in.side, q_in.index, q_in.dtype, q_out.side, q_out.index, q_out.dtype) == (
        "input", 0, "int8", "output", 0, "int8")
    # the qparams are PyTorch's quantized model's: its input quantize and its output dequantize
    assert (q_in.scale, q_in.zero_point) == pytest.approx(_input_qparams(r.quantized_model))
    assert (q_out.scale, q_out.zero_point) == pytest.approx(model_output_qparams(r.quantized_model)[0])
    plan = read_pte(r.pte).program.execution_plan[0]
    order = list(plan.values[plan.inputs[0]].val.dim_order)
    assert order == ([0, 2, 3, 1] if layout is torch.channels_last else [0, 1, 2, 3])  # the layout of the float I/O
    for (x,) in calib[:4]:
        xq = torch.from_numpy(quantize_np(x.contiguous().numpy(), q_in.scale, q_in.zero_point))
        xq = xq.contiguous(memory_format=layout)
        out = run(r.pte, [xq])[0]
        assert out.dtype == torch.int8
        with torch.no_grad():
            ref = quantize_np(r.quantized_model(x).contiguous().numpy(), q_out.scale, q_out.zero_point)
        assert_within_steps(out.contiguous().numpy(), ref, 1, q_out.scale)
        # float in, float out: the input quantized with the same qparams, the output dequantized with its own
        torch.testing.assert_close(run(r.pte, [x])[0], (out.float() - q_out.zero_point) * q_out.scale)


def test_quantized_io_is_shown_by_the_report_and_inspect_pte(tmp_path):
    model, calib = _model_and_data()
    r = lower(model, calib[0], calib, quantized_io=True)
    q_in, q_out = r.report.quantized_io
    words = (f"input 0: int8, scale {q_in.scale:.6g}, zero point {q_in.zero_point}",
             f"output 0: int8, scale {q_out.scale:.6g}, zero point {q_out.zero_point}")
    for text in (str(r.report), r.report.to_markdown(), r.report.to_html()):
        assert all(w in text for w in words)
    data = json.loads(r.report.to_json())
    jsonschema.validate(data, load_schema())
    assert [(q["side"], q["scale"], q["zero_point"], q["qmin"], q["qmax"]) for q in data["quantized_io"]] == [
        ("input", q_in.scale, q_in.zero_point, -128, 127), ("output", q_out.scale, q_out.zero_point, -128, 127)]
    summary = inspect_pte(r.pte)
    assert [m.name for m in summary.methods] == ["forward"]  # the qparams' constant methods are shown under it
    assert summary.methods[0].inputs[0].dtype == "int8" and summary.methods[0].outputs[0].dtype == "int8"
    assert [(q["side"], q["scale"]) for q in summary.methods[0].quantized_io] == [("input", q_in.scale),
                                                                                ("output", q_out.scale)]
    assert all(w in str(summary) for w in words)
    plain = lower(model, calib[0], calib)
    assert plain.report.quantized_io == [] and inspect_pte(plain.pte).methods[0].quantized_io == []
    assert json.loads(plain.report.to_json())["quantized_io"] == []


def test_quantized_io_refuses_a_float_input_in_one_line():
    model, calib = _model_and_data()
    with pytest.raises(LoweringError) as err:
        lower(model, calib[0], calib, quantized_io=True, precision="body.0=float")
    assert "\n" not in str(err.value) and "quantized_io: input 0 (x) is read by" in str(err.value)


def test_unknown_module_is_a_lowering_error_listing_the_modules():
    model, calib = _model_and_data()
    with pytest.raises(LoweringError, match=r"no module 'haed' .*; its modules are: body, body.0, body.1, head"):
        lower(model, calib[0], calib, precision="haed=float")


def test_recipe_gives_the_bytes_of_lower():
    from executorch.export import export

    from executorch_neutron.recipes import get_imxrt700_recipe

    model, calib = _model_and_data()
    options = {"precision": "body.1=float", "quantized_io": True}
    expected = lower(model, calib[0], calib, target="imxrt700", **options)
    assert {rej.reason for rej in expected.report.rejections} == {KEPT_FLOAT_REASON}
    recipe = get_imxrt700_recipe("imxrt700", calibration_inputs=calib, **options)
    assert export(model, [calib[0]], export_recipe=recipe).get_pte_buffer() == expected.pte


def _cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "executorch_neutron", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)


def test_cli_precision_and_quantized_io(tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "p.json").write_text(json.dumps({"body.1": "float"}))
    pte, report = tmp_path / "m.pte", tmp_path / "r.json"
    proc = _cli("compile", f"{tmp_path / 'm.py'}:factory", "--random-calibration", "--precision", f"@{tmp_path}/p.json",
                "--quantized-io", "-o", pte, "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert f"aten_relu_default: {KEPT_FLOAT_REASON}" in proc.stdout and "quantized I/O" in proc.stdout
    (q_in, _) = json.loads(report.read_text())["quantized_io"]
    x = np.random.default_rng(0).standard_normal((1, 3, 11, 7)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = _cli("run", pte, "--input", tmp_path / "x.npy", "--save-outputs", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert f"input 0 is float: quantized to int8 with the program's scale {q_in['scale']:.6g}" in proc.stdout
    assert "output 0 dequantized with the program's scale" in proc.stdout
    np.save(tmp_path / "xq.npy", quantize_np(x, q_in["scale"], q_in["zero_point"]))
    proc = _cli("run", pte, "--input", tmp_path / "xq.npy", "--save-outputs", tmp_path / "out_q")
    assert proc.returncode == 0 and "quantized to int8" not in proc.stdout, proc.stderr
    assert "output 0 dequantized with the program's scale" not in proc.stdout
    q_out = json.loads(report.read_text())["quantized_io"][1]
    out_q = np.load(tmp_path / "out_q" / "output_0.npy")
    assert out_q.dtype == np.int8
    np.testing.assert_allclose(np.load(tmp_path / "out" / "output_0.npy"),
                               (out_q.astype(np.float32) - q_out["zero_point"]) * q_out["scale"], rtol=1e-6)
    proc = _cli("report", pte)
    assert proc.returncode == 0 and "quantized I/O: input 0: int8" in proc.stdout, proc.stderr
    proc = _cli("compile", f"{tmp_path / 'm.py'}:factory", "--random-calibration", "--precision", "head:float",
                "-o", tmp_path / "bad.pte")
    assert proc.returncode == 2
    assert [l for l in proc.stderr.splitlines() if l.startswith("error:")] == [
        next(l for l in proc.stderr.splitlines() if l.startswith("error:"))]
    assert "'head:float' is not KEY=PRECISION" in proc.stderr and not (tmp_path / "bad.pte").exists()


def test_precision_with_a_quantizer_of_ones_own_or_a_quantized_model_is_refused():
    from executorch_neutron.quantizer import NeutronQuantizer

    model, calib = _model_and_data()
    with pytest.raises(LoweringError, match=r"precision configure the target's own quantizer, but a quantizer was "
                                            r"given: set them on that quantizer"):
        lower(model, calib[0], calib, quantizer=NeutronQuantizer(), precision="head=float")
    with pytest.raises(LoweringError, match="quantize_model=False"):
        lower(model, calib[0], quantize_model=False, precision="head=float")
    with pytest.raises(LoweringError, match="int16 activations are not supported on imxrt700"):
        lower(model, calib[0], calib, precision="default=int16")


class LinearHead(torch.nn.Module):
    """A small CNN whose last layer is an nn.Linear named `head` ([10, 1024] weight): kept float, ExecuTorch writes
    it as addmm(bias, x, permute_copy(weight)) (mm without a bias)."""

    def __init__(self, bias: bool = True):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
                                            torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 16, 3, padding=1),
                                            torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.head = torch.nn.Linear(1024, 10, bias=bias)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


_TRANSPOSES = ("aten::permute_copy", "aten::t_copy", "aten::transpose_copy")


def _transposed_constants(pte: bytes) -> list[str]:
    """The CPU kernel calls of the .pte that transpose a constant tensor (one stored in the program's constant
    buffer: data_buffer_idx > 0), read with the package's one .pte reader."""
    found = []
    for plan in read_pte(pte).program.execution_plan:
        for chain in plan.chains:
            for instr in chain.instructions:
                args = instr.instr_args
                if type(args).__name__ != "KernelCall" or plan.operators[args.op_index].name not in _TRANSPOSES:
                    continue
                value = plan.values[args.args[0]].val
                if getattr(value, "data_buffer_idx", 0) > 0:
                    found.append(plan.operators[args.op_index].name)
    return found


@pytest.mark.parametrize("bias", [True, False], ids=["addmm", "mm"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_float_linear_stores_its_weight_transposed(target, bias):
    """A linear kept float transposes no constant on the CPU at each inference: the transpose is folded at lowering
    (the .pte stores the weight transposed), so planned memory holds no [1024, 10] copy of it and the CPU estimate
    no 10,240-element permute; the outputs are PyTorch's quantized model's."""
    torch.manual_seed(0)
    model = LinearHead(bias).eval()
    gen = torch.Generator().manual_seed(1)
    calib = [(torch.randn(1, 3, 32, 32, generator=gen),) for _ in range(4)]
    r = lower(model, calib[0], calib, target=target, precision="head=float")
    assert _transposed_constants(r.pte) == [], "a constant weight is transposed on the CPU at every inference"
    weight_bytes = model.head.weight.numel() * 4
    planned = sum(inspect_pte(r.pte).methods[0].planned_buffers)
    assert planned < weight_bytes, f"planned memory {planned} B holds a transposed copy of the {weight_bytes} B weight"
    info, estimate = get_target(target), r.report.estimate
    permute_seconds = model.head.weight.numel() * info.cpu_cycles_per_element / info.cpu_clock_hz
    assert estimate["cpu_seconds"] < permute_seconds, "the CPU estimate still costs the weight's transpose"
    assert [rej.op for rej in r.report.rejections] == ["aten.addmm.default" if bias else "aten.mm.default"]
    assert "permute_copy" in str(r.report) and "Folded at lowering" in str(r.report)
    # outputs: the NPU partition's TFLite run by LiteRT, then PyTorch's float linear, computes the .pte's output
    # up to float rounding (a folded transpose is exact); PyTorch's quantized model within one input step of the
    # linear: a one-step difference of each input may move an output by scale * sum |w| of its row
    (partition,) = r.report.partitions
    assert partition.input_formats == (0,) and partition.output_formats == (0,)  # tensors as ExecuTorch stores them
    (in_q,), (out_q,) = io_quant(partition.tflite)
    bound = out_q[0] * model.head.weight.abs().sum(1).max().item()
    for (x,) in calib:
        (features,) = run_tflite(partition.tflite, [quantize_np(x.numpy(), *in_q)])
        features = torch.from_numpy((features.astype(np.float32) - out_q[1]) * out_q[0])
        out = run(r.pte, [x])[0]
        with torch.no_grad():
            torch.testing.assert_close(out, model.head(features), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(out, r.quantized_model(x), atol=bound, rtol=0)


def test_the_fold_is_deterministic_and_the_recipe_folds_the_same():
    from executorch.export import export

    from executorch_neutron.recipes import get_imx93_recipe

    torch.manual_seed(0)
    model = LinearHead().eval()
    calib = [(torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1)),)]
    first = lower(model, calib[0], calib, target="imx93", precision="head=float")
    assert lower(model, calib[0], calib, target="imx93", precision="head=float").pte == first.pte
    recipe = get_imx93_recipe(calibration_inputs=calib, precision="head=float")
    assert export(model, [calib[0]], export_recipe=recipe).get_pte_buffer() == first.pte

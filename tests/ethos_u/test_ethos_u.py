"""The Ethos-U back end (Vela): payload bytes equal to ExecuTorch's Arm flow, Vela's limits keep nodes on the CPU
with Vela's reason, the host run of the MLPerf Tiny examples matches PyTorch's quantized model, Vela's estimate
and flags in the report, a device-only .pte.

References are independent of our code: `executorch.backends.arm.arm_vela.vela_compile` (ExecuTorch's own packer
of Vela's output) for the payload bytes, Vela itself (through arm_vela) for what it refuses, PyTorch's quantized
model (`convert_pt2e`) for the numbers, Vela's console for the estimate.
"""

from __future__ import annotations

import io
import contextlib
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.ethos_u import constraints as vela_limits
from executorch_neutron.models import zoo
from executorch_neutron.models.loading import load_model
from executorch_neutron.runtime import NeutronRuntimeError, run
from harness import Fn, assert_within_steps, model_output_qparams, quantize_np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MLPERF_TINY = {
    "cifarnet": f"{EXAMPLES}/cifarnet.py:factory",
    "ds_cnn": f"{EXAMPLES}/ds_cnn.py:factory",
    "vww_mobilenet": f"{EXAMPLES}/vww_mobilenet.py:factory",
}


def _vela_refuses(tflite: bytes, flags: list[str]) -> bool:
    """ExecuTorch's Arm packer of Vela's raw output fails when Vela would leave an operator on the CPU."""
    from executorch.backends.arm.arm_vela import vela_compile

    with contextlib.redirect_stdout(io.StringIO()):
        try:
            vela_compile(tflite, list(flags))
        except Exception:  # noqa: BLE001 - the raw writer refuses CPU operators (RuntimeError), no npz written
            return True
    return False


def _lower(name: str, target: str, tmp_path=None, **options):
    model, inputs, _ = load_model(MLPERF_TINY[name])
    return lower(model, inputs, [inputs] + zoo.calibration(inputs, 4), target=target,
                 intermediates_dir=tmp_path, **options), inputs


@pytest.mark.parametrize("target", ["imx93", "ethos-u55-128", "ethos-u85-256"])
@pytest.mark.parametrize("name", ["cifarnet", "ds_cnn"])
def test_payload_bytes_equal_executorch_arm_vela(name, target, tmp_path):
    from executorch.backends.arm.arm_vela import vela_compile

    result, _ = _lower(name, target, tmp_path)
    report = result.report
    assert len(report.partitions) == 1 and report.rejections == [], str(report)
    part = report.partitions[0]
    tflite = (tmp_path / f"{part.tag}.tflite").read_bytes()
    with contextlib.redirect_stdout(io.StringIO()):
        expected = vela_compile(tflite, list(report.partitions[0].backend["vela_flags"])).processed_bytes
    assert part.blob == expected
    assert part.blob[:16] == b"vela_bin_stream\0" and part.blob[64:68] == b"COP1"  # cmd_data after 2 headers
    from executorch_neutron.ethos_u.payload import unpack

    blocks = unpack(part.blob)
    assert list(blocks) == ["vela_bin_stream", "cmd_data", "weight_data", "scratch_size", "inputs", "outputs",
                            "vela_end_stream"]
    n_in, *fields = np.frombuffer(blocks["inputs"], "<i4").tolist()  # count, then 6-D shape, elem size, ...
    assert n_in == 1 and len(fields) == 9 and fields[6] == 1  # one int8 input
    assert np.prod(fields[:6]) == np.prod(part.input_shapes[0])



#: the measured cases Vela leaves on the CPU: (module, inputs, edge op kept on the CPU, words of Vela's reason)
REFUSED = {
    "depthwise_stride4": (lambda: nn.Conv2d(8, 8, 3, stride=4, padding=1, groups=8), (1, 8, 17, 13),
                          "aten.convolution.default", "stride must be in the range (1,3)"),
    "avg_pool_9x9_same": (lambda: nn.AvgPool2d(9, stride=1, padding=4, count_include_pad=False), (1, 8, 12, 11),
                          "aten.avg_pool2d.default", "range [1, 8] with SAME padding"),
    "mean_over_4097": (lambda: Fn(lambda self, x: x.mean(dim=-1, keepdim=True)), (1, 2, 3, 4097),
                       "aten.mean.dim", "no greater than 4096"),
    # (a spatial mean over a batch runs per plane on Ethos-U, a mean over a run of other dims on a one-image view:
    # passes/batch_split.py; a mean over dims that are no run, channels and width, cannot)
    "batch_2_channel_width_mean": (lambda: Fn(lambda self, x: x.mean(dim=(1, 3), keepdim=True)), (2, 8, 10, 9),
                                   "aten.mean.dim", "Batch must be 1"),
}


@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_vela_limits_keep_node_on_cpu_with_vela_reason(case, tmp_path):
    make, shape, op, words = case
    module = nn.Sequential(make(), nn.ReLU()) if op == "aten.convolution.default" else make()
    inputs = (torch.randn(*shape),)
    # Vela itself refuses the node: the TFLite our front end writes for it (Neutron flow, no Vela limits)
    neutron = lower(module, inputs, target="imxrt700", intermediates_dir=tmp_path / "n")
    refused_by_vela = [t for t in sorted((tmp_path / "n").glob("*.tflite"))
                       if _vela_refuses(t.read_bytes(), ["--accelerator-config=ethos-u55-128",
                                                        "--output-format=raw"])]
    assert neutron.report.partitions and refused_by_vela, "Vela accepts this case: the constraint is not needed"
    # ... and the Ethos-U partitioner keeps it on the CPU with Vela's reason
    result = lower(module, inputs, target="ethos-u55-128")
    reasons = [r for r in result.report.rejections if r.op == op]
    assert reasons and words in reasons[0].reason, str(result.report)
    assert any(reasons[0].reason.endswith(f": {c.text}") for _, c in vela_limits.LIMITS), reasons[0].reason
    assert "Ethos-U" in reasons[0].message()


@pytest.mark.parametrize("target", ["imx93", "ethos-u85-512"])
@pytest.mark.parametrize("name", MLPERF_TINY)
def test_host_run_within_one_step_of_pytorch(name, target):
    result, inputs = _lower(name, target)
    assert len(result.report.partitions) == 1 and result.report.rejections == [], str(result.report)
    host = run(result.pte, inputs)[0].numpy()
    with torch.no_grad():
        ref = result.quantized_model(*inputs).numpy()
    scale, zp = model_output_qparams(result.quantized_model)[0]
    out_q, ref_q = quantize_np(host, scale, zp), quantize_np(ref, scale, zp)
    print(f"{name}: max {int(np.abs(out_q.astype(int) - ref_q).max())} steps")
    assert_within_steps(out_q, ref_q, 1, scale)


def test_report_has_vela_estimate_and_flags():
    import jsonschema

    from executorch_neutron.report import load_schema

    result, _ = _lower("cifarnet", "ethos-u55-128")
    data = result.report.to_dict()
    jsonschema.validate(data, load_schema())
    ethos = data["estimate"]
    flags = data["partitions"][0]["backend"]["vela_flags"]  # the partition's back-end section
    assert ethos["by"] == "Vela's estimate" and flags[0] == "--accelerator-config=ethos-u55-128"
    assert not any(f.startswith("--output-dir") or f.endswith(".tflite") for f in flags)
    assert isinstance(ethos["cycles"], int) and ethos["cycles"] > 0
    layers = ethos["partitions"][0]["layers"]
    # Vela's MACs of the convolutions and the classifier equal the report's own formula (Vela counts pooling too)
    assert sum(la["macs"] for la in layers if la["op"] not in ("MaxPool", "AvgPool")) == result.report.npu_macs
    assert abs(ethos["inference_seconds"] - ethos["cycles"] / 500e6) < 1e-12  # U55 high-end embedded: 500 MHz
    assert sum(layer["cycles"] for layer in layers) > 0 and {"Conv2D", "MaxPool"} <= {la["op"] for la in layers}
    assert "Vela's estimate" in str(result.report) and "per layer" in result.report.to_html()
    text, html = str(result.report), result.report.to_html()
    assert text.startswith("Ethos-U delegation report") and "<h1>Ethos-U delegation report</h1>" in html
    assert "the target's SRAM size is not known here" in text and "of 0 B" not in text + html  # U55: no bound


def test_device_only_pte_has_no_reference_and_host_says_so():
    full, inputs = _lower("cifarnet", "imx93")
    device, _ = _lower("cifarnet", "imx93", embed_reference=False)
    assert full.payloads == device.payloads  # the same Vela payload
    tflite_bytes = len(full.report.partitions[0].blob)
    assert len(device.pte) < len(full.pte) and b"ethos_u_reference/" not in device.pte
    assert len(full.pte) - len(device.pte) > tflite_bytes // 2  # the reference TFLite (weights) is gone
    with pytest.raises(NeutronRuntimeError, match="device-only"):
        run(device.pte, inputs)


def test_same_model_same_bytes():
    a, _ = _lower("ds_cnn", "ethos-u65-256")
    b, _ = _lower("ds_cnn", "ethos-u65-256")
    assert a.pte == b.pte


def test_vela_prints_nothing_into_a_redirected_sys_stdout():
    """Vela's Python prints (its per-layer tables) go to its console file, also when sys.stdout is an object of
    its own (a notebook, pytest's capture, redirect_stdout): before, they reached the caller's stream."""
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval()
    x = (torch.randn(1, 3, 8, 8),)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        lower(m, x, [x], target="imx93")
    assert out.getvalue() == "" and err.getvalue() == ""


def test_recipe_gives_the_bytes_of_lower():
    from executorch.export import export

    from executorch_neutron.recipes import get_imx93_recipe

    model, inputs, _ = load_model(MLPERF_TINY["ds_cnn"])
    calib = [inputs] + zoo.calibration(inputs, 2)
    expected = lower(model, inputs, calib, target="imx93").pte
    recipe = get_imx93_recipe(calibration_inputs=calib)
    assert export(model, [inputs], export_recipe=recipe).get_pte_buffer() == expected


def test_cli_compile_and_run_for_imx93(tmp_path):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    x = tmp_path / "x.npy"
    np.save(x, load_model(MLPERF_TINY["cifarnet"])[1][0].numpy())
    env = dict(os.environ, PYTHONWARNINGS="ignore")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "executorch_neutron", *map(str, args)], capture_output=True,
                              text=True, cwd=root, env=env, timeout=300)

    compiled = cli("compile", MLPERF_TINY["cifarnet"], "--random-calibration", "--target", "imx93",
                   "-o", tmp_path / "c.pte", "--report", tmp_path / "c.json", "--intermediates", tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    assert "on the Ethos-U NPU (Vela)" in compiled.stdout and (tmp_path / "ethos_u_0.tflite").is_file()
    import json

    assert json.loads((tmp_path / "c.json").read_text())["estimate"]["cycles"] > 0
    ran = cli("run", tmp_path / "c.pte", "--input", x)
    assert ran.returncode == 0, ran.stderr
    assert "reference TFLite (int8 or int16)" in ran.stderr  # the host run says what it executed
    listed = cli("targets")
    assert all(t in listed.stdout for t in ("imx93", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256"))


def test_vela_cpu_operator_is_an_error_naming_it(tmp_path):
    """Should a node Vela refuses reach it, lowering stops with Vela's reason instead of writing a payload."""
    from executorch_neutron.ethos_u import VelaError
    from executorch_neutron.ethos_u.vela_call import compile_tflite
    from executorch_neutron.target import get_target

    module = nn.Sequential(nn.Conv2d(8, 8, 3, stride=4, padding=1, groups=8), nn.ReLU())
    lower(module, (torch.randn(1, 8, 17, 13),), target="imxrt700", intermediates_dir=tmp_path)
    tflite = next(tmp_path.glob("*.tflite")).read_bytes()
    with pytest.raises(VelaError, match=r"DEPTHWISE_CONV_2D .*stride") as err:
        compile_tflite(tflite, get_target("ethos-u55-128").vela_flags, "dw")
    assert err.value.cpu_ops and err.value.cpu_ops[0][0] == "DEPTHWISE_CONV_2D"


TARGETS = {  # name: (Vela accelerator, system config, memory mode, clock)
    "imx93": ("ethos-u65-256", "Ethos_U65_High_End", "Dedicated_Sram_384KB", 1e9),
    "ethos-u65-256": ("ethos-u65-256", "Ethos_U65_High_End", "Dedicated_Sram_384KB", 1e9),
    "ethos-u55-256": ("ethos-u55-256", "Ethos_U55_High_End_Embedded", "Shared_Sram", 500e6),
    "ethos-u55-128": ("ethos-u55-128", "Ethos_U55_High_End_Embedded", "Shared_Sram", 500e6),
    # U85: the defaults of ExecuTorch's Arm backend (ethosu/compile_spec.py), read from it in the test below
    **{f"ethos-u85-{n}": (f"ethos-u85-{n}", "Ethos_U85_SYS_DRAM_Mid", "Sram_Only", 1e9)
       for n in (128, 256, 512, 1024, 2048)},
}


@pytest.mark.fast
def test_u85_defaults_are_executorch_arm_backend_defaults():
    """Arm's `ethosu_compile_spec` resolves the same system config and memory mode for every U85 size (read from
    its source: its module imports Arm's TOSA serializer, which is not installable here)."""
    import importlib.util
    import re

    src = Path(importlib.util.find_spec("executorch.backends.arm").submodule_search_locations[0])
    text = (src / "ethosu" / "compile_spec.py").read_text()
    branch = text[text.index('"ethos-u85" in target_lower'):]
    system, memory = re.findall(r'"(\w+)" if (?:system_config|memory_mode) is None', branch)[:2]
    for n in (128, 256, 512, 1024, 2048):
        assert TARGETS[f"ethos-u85-{n}"][1:3] == (system, memory)


def test_vela_config_options_of_the_spec(tmp_path):
    """system_config / memory_mode / config_ini (Arm's compile-spec names) become Vela's flags; the payload equals
    ExecuTorch's arm_vela for the same TFLite and those flags, with a user's copy of vela.ini."""
    import importlib.util
    import shutil

    from executorch.backends.arm.arm_vela import vela_compile

    from executorch_neutron import NeutronCompileSpec
    from executorch_neutron.ethos_u import vela_flags

    with pytest.raises(ValueError, match="Ethos-U targets only"):
        NeutronCompileSpec(target="imxrt700", memory_mode="Sram_Only")
    ini = tmp_path / "my_vela.ini"
    shutil.copy(Path(importlib.util.find_spec("ethosu").submodule_search_locations[0]) / "config_files/Arm/vela.ini",
                ini)
    options = dict(system_config="Ethos_U85_SYS_Flash_High", memory_mode="Shared_Sram", config_ini=str(ini))
    spec = NeutronCompileSpec(target="ethos-u85-256", **options)
    assert NeutronCompileSpec.from_compile_specs(spec.to_compile_specs()) == spec
    assert {f"--config={ini}", "--system-config=Ethos_U85_SYS_Flash_High", "--memory-mode=Shared_Sram"} <= set(
        vela_flags(spec))
    result, _ = _lower("ds_cnn", "ethos-u85-256", tmp_path, **options)
    part = result.report.partitions[0]
    assert result.report.partitions[0].backend["vela_flags"] == vela_flags(spec)
    assert all(f in str(result.report) for f in vela_flags(spec))  # the report lists the flags used
    with contextlib.redirect_stdout(io.StringIO()):
        expected = vela_compile((tmp_path / f"{part.tag}.tflite").read_bytes(), list(vela_flags(spec)))
    assert part.blob == expected.processed_bytes


@pytest.mark.parametrize("name", TARGETS)
def test_targets_and_compile_spec(name):
    import configparser
    import importlib.util

    from executorch_neutron import NeutronCompileSpec, get_target
    from executorch_neutron.ethos_u import vela_flags

    acc, system, memory, clock = TARGETS[name]
    t = get_target(name.upper())
    assert (t.kind, t.accelerator, t.system_config, t.memory_mode, t.core_clock_hz) == ("ethos-u", acc, system,
                                                                                         memory, clock)
    ini = configparser.ConfigParser()  # the sections and clock exist in the vela.ini Vela ships
    ini.read(Path(importlib.util.find_spec("ethosu").submodule_search_locations[0]) / "config_files/Arm/vela.ini")
    assert float(ini[f"System_Config.{system}"]["core_clock"]) == clock and f"Memory_Mode.{memory}" in ini
    other = "Shared_Sram" if memory == "Sram_Only" else "Sram_Only"
    spec = NeutronCompileSpec(target=name, extra_flags=f"--memory-mode={other} --optimise=Size")
    assert spec.target_info.kind == "ethos-u" and NeutronCompileSpec.from_compile_specs(spec.to_compile_specs()) == spec
    flags = vela_flags(spec)
    assert f"--memory-mode={other}" in flags and f"--memory-mode={memory}" not in flags
    assert flags[0] == f"--accelerator-config={acc}" and flags[-1] == "--optimise=Size"


def test_unknown_target_lists_ethos_u_targets():
    from executorch_neutron import NeutronCompileSpec

    with pytest.raises(ValueError, match="imx93"):
        NeutronCompileSpec(target="imx94")


def test_two_partitions_around_a_cpu_node_run_on_the_host():
    """A node Vela refuses splits the model: two Ethos-U partitions, the node between them on the CPU; the report
    sums Vela's estimate over the partitions and the host run still matches PyTorch's quantized model."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=4, padding=1, groups=8),
                          nn.ReLU(), nn.Conv2d(8, 16, 1)).eval()
    inputs = (torch.randn(1, 3, 22, 19),)
    result = lower(model, inputs, [inputs] + zoo.calibration(inputs, 4), target="imx93")
    report = result.report
    assert [p.tag for p in report.partitions] == ["ethos_u_0", "ethos_u_1"], str(report)
    assert {r.op for r in report.rejections} == {"aten.convolution.default", "aten.relu.default"}
    est = report.to_dict()["estimate"]
    assert est["cycles"] == sum(p["cycles"] for p in est["partitions"]) and len(est["partitions"]) == 2
    host = run(result.pte, inputs)[0].numpy()
    with torch.no_grad():
        ref = result.quantized_model(*inputs).numpy()
    scale, zp = model_output_qparams(result.quantized_model)[0]
    assert_within_steps(quantize_np(host, scale, zp), quantize_np(ref, scale, zp), 1, scale)

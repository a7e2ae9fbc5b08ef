"""The Neutron per-layer estimate (neutron/estimate.py): cycle counts of single layers computed by hand from the
model's definition and the target's figures, the estimate's total against NXP's published i.MX RT700 latencies,
its MACs against Vela's for the same TFLite, its place in every report format, the converter hook, the target
override and the note that holds it against the published figures.

Independent references: NXP's published latencies (docs/guide/sources.md), the published networks' MACs counted from their
definitions, hand-computed cycle counts, LiteRT's interpreter (not our reader), Vela's MAC counts.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest

from executorch_neutron import lower
from executorch_neutron.models import zoo
from executorch_neutron.models.loading import load_model
from executorch_neutron.neutron import estimate
from executorch_neutron.target import get_target

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def ds_cnn():
    model, inputs, _ = load_model(f"{EXAMPLES}/ds_cnn.py:factory")
    return lower(model, inputs, [inputs] + zoo.calibration(inputs, 2), target="imxrt700")


def _litert_layers(tflite: bytes) -> dict[str, tuple[str, int, int]]:
    """output tensor -> (op, activation bytes read + written, constant bytes), from LiteRT's interpreter."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=tflite)
    tensors = {t["index"]: t for t in it.get_tensor_details()}
    ops = it._get_ops_details()  # noqa: SLF001 - LiteRT's own operator list (names, input/output indices)
    produced = {o for op in ops for o in op["outputs"]} | {d["index"] for d in it.get_input_details()}

    def nbytes(i):
        t = tensors[i]
        return int(np.prod(t["shape"])) * np.dtype(t["dtype"]).itemsize

    out = {}
    for op in ops:
        ins = [i for i in op["inputs"] if i >= 0]
        acts = sum(nbytes(i) for i in ins if i in produced) + sum(nbytes(o) for o in op["outputs"])
        consts = sum(nbytes(i) for i in ins if i not in produced)
        out[tensors[op["outputs"][0]]["name"]] = (op["op_name"], acts, consts)
    return out


def test_layer_cycles_computed_by_hand(ds_cnn):
    """The DS-CNN's stem and a depthwise layer, by hand. imxrt700: 8 pipes x 8 MACs (NXP's simulator config), 16 B
    per cycle for activations and weights (assumed), the fitted depthwise rate and cost per kernel (target.py)."""
    target = get_target("imxrt700")
    assert (target.num_pipes, target.num_macs, target.activation_bytes_per_cycle, target.weight_bytes_per_cycle) == (
        8, 8, 16, 16)
    fixed, dw_rate = round(target.layer_cycles), 8 * target.depthwise_macs_per_pipe
    layers = ds_cnn.report.partitions[0].estimate["layers"]
    convs = [la for la in layers if la["op"] == "CONV_2D"]
    dws = [la for la in layers if la["op"] == "DEPTHWISE_CONV_2D"]
    # stem: 10x4 stride-2 conv of the 49x10 input padded (5, 1) -> 25x5 positions, 64 out channels, 1 input
    # channel filling 1 of a pipe's 8 MACs: 125 x 64 x 40 x 8 slots / 64 MACs per cycle = 40,000 cycles
    stem = convs[0]
    assert stem["macs"] == 125 * 64 * 40 and stem["kind"] == "conv"
    assert stem["compute_cycles"] == 125 * 64 * 40 * 8 // 64 == 40_000
    assert stem["data_cycles"] == math.ceil((59 * 12 + 125 * 64) / 16 + (64 * 40 + 64 * 4) / 16)  # int8 in/out, int32 bias
    assert stem["cycles"] == 40_000 + fixed
    # pointwise 64 -> 64 on 25x5: 125 x 64 x 64 / 64 = 8,000 cycles
    assert convs[1]["kind"] == "pointwise" and convs[1]["cycles"] == 8_000 + fixed
    # depthwise 3x3 of 64 channels on 25x5: 125 x 64 x 9 MACs at the depthwise rate
    assert dws[0]["kind"] == "depthwise" and dws[0]["cycles"] == math.ceil(125 * 64 * 9 / dw_rate) + fixed
    assert [la["cycles"] for la in layers if la["op"] == "RESHAPE"] == [0] * 2


def test_macs_equal_vela_and_the_partition_sums_its_layers(ds_cnn):
    from executorch_neutron.ethos_u.vela_call import compile_tflite

    part = ds_cnn.report.partitions[0]
    layers = {la["name"]: la for la in part.estimate["layers"]}
    litert = _litert_layers(part.tflite)
    vela = {}  # Vela splits a fused activation into a row of its own under the same name: sum per name
    for la in compile_tflite(part.tflite, get_target("ethos-u55-128").vela_flags, "ds_cnn").estimate.layers:
        vela[la.name] = vela.get(la.name, 0) + la.macs
    assert set(layers) == set(litert)
    checked = 0
    for name, (op, acts, consts) in litert.items():
        la = layers[name]
        assert la["op"] == op and (la["activation_bytes"], la["weight_bytes"]) == (acts, consts), name
        if la["macs"]:  # convolutions and the classifier: Vela counts the same MACs for the same layer
            assert vela[name] == la["macs"], name
            checked += 1
    assert checked == 11  # 9 convolutions, the global average pool (a depthwise convolution) + the classifier
    assert part.estimate["cycles"] == sum(la["cycles"] for la in layers.values())
    total = ds_cnn.report.estimate
    assert total["npu_seconds"] == pytest.approx(part.estimate["cycles"] / 324e6)  # NXP: 324 MHz
    assert total["inference_seconds"] == pytest.approx(total["npu_seconds"] + total["cpu_seconds"])


# NXP's published i.MX RT700 latencies (docs/guide/sources.md) and the networks' MACs counted from their definitions
PUBLISHED = {
    "nxp_cifarnet": (848e-6, 32 * 32 * 32 * 75 + 16 * 16 * 32 * 800 + 8 * 8 * 64 * 800 + 1024 * 10),
    "ds_cnn_s": (585.5e-6, 25 * 5 * 64 * 40 + 4 * (25 * 5 * 64 * 9 + 25 * 5 * 64 * 64) + 64 * 12),  # 576-595 us
    "mobilenet_v1_025_128": (2759e-6, 13_570_048),  # Vela's count of the same TFLite; about 14 M (Google's table)
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_estimate_within_the_expected_error_of_the_published_latency(name):
    """The boards ran int8 inputs: the compared time is the NPU's (these networks leave no CPU operator)."""
    seconds, macs = PUBLISHED[name]
    model, inputs = zoo.MODELS[name]()
    report = lower(model, inputs, [inputs] + zoo.calibration(inputs, 2), target="imxrt700").report
    assert len(report.partitions) == 1 and not report.rejections, str(report)
    assert report.npu_macs == macs
    ratio = seconds / report.estimate["npu_seconds"]
    assert abs(ratio - 1) <= min(0.25, estimate.EXPECTED_ERROR), f"published / estimate = {ratio:.2f}"
    io = report.estimate["cpu_nodes"]
    assert io == 2, "a quantize of the input and a dequantize of the output"


def test_every_report_format_shows_the_estimate_as_an_estimate(ds_cnn):
    import jsonschema

    from executorch_neutron.report import load_schema

    report = ds_cnn.report
    data = report.to_dict()
    jsonschema.validate(data, load_schema())
    block = data["estimate"]
    assert block["source"] == "estimate" and "max(compute, data)" in block["formula"]
    assert block["by"] == "Neutron estimate" and block["notes"][0].startswith("Neutron estimate: a model")
    assert any("assumed" in n for n in block["notes"]) and any("0.797 ms" in n for n in block["notes"])
    layers = block["partitions"][0]["layers"]
    md, html, text = report.to_markdown(), report.to_html(), str(report)
    assert "## Per layer (Neutron estimate), most cycles first" in md and "Neutron estimate per layer" in html
    assert "Neutron estimate: " in text and "(see the notes)" in text and "assumed" in md + html + text
    table = [line for line in md.splitlines() if line.startswith("| neutron_0 | `")]
    cycles = [int(line.split("|")[4].strip().replace(",", "")) for line in table]
    assert cycles == sorted(cycles, reverse=True) and len(table) == len(layers)  # the dominant layers first


def test_ethos_u_report_has_the_same_per_layer_table():
    model, inputs, _ = load_model(f"{EXAMPLES}/cifarnet.py:factory")
    md = lower(model, inputs, target="ethos-u55-128").report.to_markdown()
    assert "## Per layer (Vela's estimate), most cycles first" in md
    assert "| partition | layer | operator | cycles | share | MACs |" in md


@pytest.mark.fast
def test_converter_figures_replace_the_estimate():
    from executorch_neutron.backends import BACKENDS
    from executorch_neutron.target import NEUTRON

    figures = {"layers": [{"name": "conv", "op": "Conv2DStandardV2", "cycles": 1200, "macs": 5000}]}
    est = BACKENDS[NEUTRON].partition_estimate(b"unused", {estimate.CONVERTER_KEY: figures}, get_target("imxrt700"))
    assert est["source"] == "NXP converter" and est["cycles"] == 1200
    assert est["inference_seconds"] == pytest.approx(1200 / 324e6)


def test_a_user_overrides_an_assumed_figure(ds_cnn):
    tflite = ds_cnn.report.partitions[0].tflite
    base = get_target("imxrt700")
    slow = dataclasses.replace(base, weight_bytes_per_cycle=1, activation_bytes_per_cycle=1)
    fast, slowed = estimate.estimate_tflite(tflite, base), estimate.estimate_tflite(tflite, slow)
    for a, b in zip(fast.layers, slowed.layers):
        assert b.data_cycles >= a.data_cycles and b.compute_cycles == a.compute_cycles
    assert slowed.cycles > fast.cycles


def test_the_calibration_note_matches_the_fit_and_a_fresh_estimate_of_the_published_model():
    """The note's expected error is estimate.EXPECTED_ERROR; NXP: MLPerf Tiny's anomaly-detection autoencoder, 0.797 ms
    on the MCX N94x NPU (docs/guide/sources.md): the note's estimate and ratio must be what the estimate gives today."""
    from executorch_neutron.neutron.plugin import CALIBRATION_NOTE as NEUTRON_CALIBRATION_NOTE

    assert f"expected error +-{100 * estimate.EXPECTED_ERROR:.0f}%" in NEUTRON_CALIBRATION_NOTE
    assert "lower bound" not in NEUTRON_CALIBRATION_NOTE
    model, inputs = zoo.anomaly_autoencoder()
    result = lower(model, inputs, [inputs] + zoo.calibration(inputs, 2), target="mcxn94x")
    assert len(result.report.partitions) == 1 and not result.report.rejections
    assert result.report.npu_macs == 640 * 128 * 2 + 128 * 128 * 6 + 128 * 8 * 2  # the published network's MACs
    ms = 1e3 * result.report.estimate["npu_seconds"]
    noted_ms, ratio = map(float, re.search(r"gives ([\d.]+) ms .* = ([\d.]+)", NEUTRON_CALIBRATION_NOTE).groups())
    assert round(ms, 3) == noted_ms and round(0.797 / ms, 2) == ratio

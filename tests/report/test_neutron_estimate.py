"""The Neutron per-layer estimate (neutron/estimate.py): its formula recomputed independently, its MACs against
Vela's for the same TFLite, its place in every report format, the converter hook, the target override and the
note that holds it against NXP's published figure.

Independent references: LiteRT's interpreter reads the TFLite's operators and tensors (not our reader), Vela
counts each layer's MACs, the target's figures are plain numbers; the published figure is NXP's.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest

from executorch_neutron import lower, zoo
from executorch_neutron.loading import load_model
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


def test_formula_recomputed_from_the_targets_figures_and_vela_macs(ds_cnn):
    from executorch_neutron.ethos_u.vela_call import compile_tflite

    target = get_target("imxrt700")
    part = ds_cnn.report.partitions[0]
    layers = {la["name"]: la for la in part.neutron_estimate["layers"]}
    litert = _litert_layers(part.tflite)
    vela = {}  # Vela splits a fused activation into a row of its own under the same name: sum per name
    for la in compile_tflite(part.tflite, get_target("ethos-u55-128").vela_flags, "ds_cnn").estimate.layers:
        vela[la.name] = vela.get(la.name, 0) + la.macs
    assert set(layers) == set(litert)
    checked = 0
    for name, (op, acts, consts) in litert.items():
        la = layers[name]
        assert la["op"] == op
        if la["macs"]:  # convolutions and the classifier: Vela counts the same MACs for the same layer
            assert vela[name] == la["macs"], name
            checked += 1
        if op == "RESHAPE":
            assert la["cycles"] == 0
            continue
        compute = math.ceil(max(la["macs"], _output_elements(part.tflite, name)) / 64)  # 8 pipes x 8 MACs
        data = math.ceil(acts / 16 + consts / 16)  # the target's (assumed) bytes per cycle, read from target.py
        assert (target.macs_per_cycle, target.activation_bytes_per_cycle, target.weight_bytes_per_cycle) == (64, 16, 16)
        assert la["cycles"] == max(compute, data), (name, la)
    assert checked == 10  # 9 convolutions + the classifier
    assert part.neutron_estimate["cycles"] == sum(la["cycles"] for la in layers.values())
    assert ds_cnn.report.neutron_estimate["inference_seconds"] == pytest.approx(
        part.neutron_estimate["cycles"] / 325e6)


def _output_elements(tflite: bytes, name: str) -> int:
    from ai_edge_litert.interpreter import Interpreter

    return next(int(np.prod(t["shape"])) for t in Interpreter(model_content=tflite).get_tensor_details()
                if t["name"] == name)


def test_every_report_format_shows_the_estimate_as_an_estimate(ds_cnn):
    import jsonschema

    from executorch_neutron.report import load_schema

    report = ds_cnn.report
    data = report.to_dict()
    jsonschema.validate(data, load_schema())
    block = data["neutron_estimate"]
    assert block["source"] == "estimate" and "max(compute, data)" in block["formula"]
    assert any("assumed" in f for f in block["figures"]) and "0.797 ms" in block["calibration"]
    layers = block["partitions"][0]["layers"]
    md, html, text = report.to_markdown(), report.to_html(), str(report)
    assert "## Per layer (Neutron estimate), most cycles first" in md and "Neutron estimate per layer" in html
    assert "Neutron estimate (see notes)" in text and "assumed" in md + html + text
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
    assert est["inference_seconds"] == pytest.approx(1200 / 325e6)


def test_a_user_overrides_an_assumed_figure(ds_cnn):
    tflite = ds_cnn.report.partitions[0].tflite
    base = get_target("imxrt700")
    slow = dataclasses.replace(base, weight_bytes_per_cycle=1, activation_bytes_per_cycle=1)
    fast, slowed = estimate.estimate_tflite(tflite, base), estimate.estimate_tflite(tflite, slow)
    for a, b in zip(fast.layers, slowed.layers):
        assert b.data_cycles >= a.data_cycles and b.compute_cycles == a.compute_cycles
    assert slowed.cycles > fast.cycles


def test_the_calibration_note_matches_a_fresh_estimate_of_the_published_model():
    """NXP: MLPerf Tiny's anomaly-detection autoencoder, 0.797 ms on the MCX N94x NPU (FACTS.md); the note's
    estimate and ratio must be what the estimate gives today."""
    from executorch_neutron.report.notes import NEUTRON_CALIBRATION_NOTE

    model, inputs = zoo.anomaly_autoencoder()
    result = lower(model, inputs, [inputs] + zoo.calibration(inputs, 2), target="mcxn94x")
    assert len(result.report.partitions) == 1 and not result.report.rejections
    assert result.report.npu_macs == 640 * 128 * 2 + 128 * 128 * 6 + 128 * 8 * 2  # the published network's MACs
    ms = 1e3 * result.report.neutron_estimate["inference_seconds"]
    noted_ms, ratio = map(float, re.search(r"gives ([\d.]+) ms .* = ([\d.]+)", NEUTRON_CALIBRATION_NOTE).groups())
    assert round(ms, 3) == noted_ms and round(0.797 / ms, 2) == ratio

"""`report model.pte --model-explorer DIR`: each partition's TFLite and node data that Model Explorer's own TFLite
adapter and node-data format accept, keyed by the tensors its graph shows, with Vela's per-layer cycles as the
compile-time report has them. No browser: the graph is Model Explorer's adapter output."""

import json

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.cli import main

pytest.importorskip("model_explorer", reason="ai-edge-model-explorer is not installed (the [test] extra has it)")
from model_explorer.builtin_tflite_flatbuffer_adapter import BuiltinTfliteFlatbufferAdapter  # noqa: E402


def _model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 1), nn.Tanh(),
                          nn.Conv2d(8, 4, 1)).eval()
    return model, (torch.randn(1, 3, 6, 5),)


def _explorer_graph(tflite_path):
    """Model Explorer's own view of a TFLite: graph id -> {output tensor name of each operator node}."""
    collections = BuiltinTfliteFlatbufferAdapter().convert(str(tflite_path), {})["graphCollections"]
    graphs = {}
    for collection in collections:
        for graph in collection.graphs:
            names = set()
            for node in graph["nodes"]:
                if node["label"] in ("GraphInputs", "GraphOutputs", "pseudo_const"):
                    continue
                for out in node["outputsMetadata"]:
                    names |= {a["value"] for a in out["attrs"] if a["key"] == "tensor_name"}
            graphs[graph["id"]] = names
    return graphs


@pytest.mark.parametrize("target", ["ethos-u55-128", "imxrt700"])
def test_overlays_match_the_explorer_graph(target, tmp_path, capsys):
    model, x = _model()
    result = lower(model, x, [x], target=target, operators_not_to_delegate=("aten.tanh.default",))
    assert len(result.report.partitions) == 2, str(result.report)
    pte = result.save(tmp_path / "m.pte")
    assert main(["report", str(pte), "--model-explorer", str(tmp_path / "me")]) == 0
    assert "model-explorer " in capsys.readouterr().out
    for p in result.report.partitions:
        graphs = _explorer_graph(tmp_path / "me" / f"{p.tag}.tflite")
        placement = json.loads((tmp_path / "me" / f"{p.tag}.placement.json").read_text())
        assert set(placement) == set(graphs)  # the node data names the graphs Model Explorer shows
        for graph_id, tensors in graphs.items():
            assert set(placement[graph_id]["results"]) == tensors  # every operator, and nothing else
            assert {r["value"] for r in placement[graph_id]["results"].values()} == {"NPU"}
        cycles_file = tmp_path / "me" / f"{p.tag}.cycles.json"
        (graph_id, tensors), = graphs.items()
        cycles = json.loads(cycles_file.read_text())[graph_id]["results"]
        assert cycles and set(cycles) <= tensors
        want = {}
        # the estimate at lowering time: Vela's (a separate Vela run), or the Neutron estimate of the TFLite the
        # compile step was given; the overlay is computed again from the partition's TFLite in the .pte
        layers = p.estimate["layers"]
        for layer in layers:
            if layer["name"] in tensors:
                want[layer["name"]] = want.get(layer["name"], 0) + layer["cycles"]
        assert {k: v["value"] for k, v in cycles.items()} == want


def test_an_estimate_handed_in_becomes_the_cycles_overlay(tmp_path):
    """An estimate given per partition (as `compile --model-explorer` passes the report's, which holds NXP's
    converter's figures where the SDK reported them) replaces the back end's own: it is written as node data on
    the operators it names, and only those."""
    from executorch_neutron.report.model_explorer import write_overlays

    model, x = _model()
    result = lower(model, x, [x], operators_not_to_delegate=("aten.tanh.default",))
    tag = result.report.partitions[0].tag
    tensors = _explorer_graph_of(result, tmp_path, tag)
    named = sorted(tensors)[:2]
    layers = [{"name": n, "op": "?", "cycles": 10 * (i + 1)} for i, n in enumerate(named)] + [
        {"name": "not_a_tensor_of_the_graph", "op": "?", "cycles": 99}]
    overlays = write_overlays(result.pte, tmp_path / "me", {tag: (layers, "cycles (estimate)")})
    assert [o.name for o in overlays] == [p.tag for p in result.report.partitions]
    (graph_id, _), = _explorer_graph(tmp_path / "me" / f"{tag}.tflite").items()
    cycles = json.loads((tmp_path / "me" / f"{tag}.cycles.json").read_text())[graph_id]["results"]
    assert {k: v["value"] for k, v in cycles.items()} == {n: 10 * (i + 1) for i, n in enumerate(named)}


def _explorer_graph_of(result, tmp_path, tag):
    path = tmp_path / f"{tag}.tflite"
    path.write_bytes(next(p.tflite for p in result.report.partitions if p.tag == tag))
    (tensors,) = _explorer_graph(path).values()
    return tensors

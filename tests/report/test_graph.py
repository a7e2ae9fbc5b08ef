"""The HTML report's graph: one SVG element per node of the lowered program, with the partition (or the CPU) it
runs on, CPU reasons in the tooltips, and one marked crossing per partition boundary tensor.

References are read from the lowered program itself (the partitions' nodes, the partitioner's rejections, the
delegate calls' arguments and outputs), not from the graph module under test.
"""

import re
import xml.etree.ElementTree as ET

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.core.exported import lowered_modules
from models.split_models import three_partitions

SVG = ""  # inline SVG in HTML: no namespace (the page names no URL)


def _lowered(model, inputs, **options):
    return lower(model, inputs, [inputs], **options)


def _svgs(html: str) -> list:
    return [ET.fromstring(s) for s in re.findall(r"<svg .*?</svg>", html, flags=re.S)]


def _nodes(svgs) -> dict[str, list]:
    """data-node -> the <g> elements that draw it, over all SVGs of the page."""
    found = {}
    for svg in svgs:
        for g in svg.iter(f"{SVG}g"):
            if "node" in g.get("class", "").split():
                found.setdefault(g.get("data-node"), []).append(g)
    return found


def _boundary_tensors(result) -> set[str]:
    """Every delegate input argument and output of the lowered program, as "<tag>:in|out:<k>"."""
    gm = result.edge_program.exported_program().graph_module
    out = set()
    for (call, lowered), part in zip(lowered_modules(gm).items(), result.report.partitions):
        out |= {f"{part.tag}:in:{k}" for k in range(len(call.args) - 1)}
        out |= {f"{part.tag}:out:{k}" for k in range(len(lowered.original_module.graph_signature.user_outputs))}
    return out


@pytest.fixture(scope="module")
def three():
    return _lowered(*three_partitions())


def test_every_node_once_with_its_partition(three):
    report = three.report
    assert len(report.partitions) == 3, str(report)
    nodes = _nodes(_svgs(report.to_html()))
    for p in report.partitions:
        for name in p.nodes:
            assert len(nodes.get(name, [])) == 1, f"{name} of {p.tag} drawn {len(nodes.get(name, []))} times"
            classes = nodes[name][0].get("class").split()
            assert f"part-{p.tag}" in classes and "npu" in classes, classes
    for r in report.rejections:
        (g,) = nodes[r.node]
        assert "cpu" in g.get("class").split()
        title = g.find(f"{SVG}title").text
        assert r.reason in title and r.op in title
    drawn_compute = {n for n, gs in nodes.items() if "io" not in gs[0].get("class").split()}
    assert drawn_compute == {n for p in report.partitions for n in p.nodes} | {r.node for r in report.rejections}


def test_crossings_are_the_partition_boundary_tensors(three):
    overview = _svgs(three.report.to_html())[0]
    crossings = [p for p in overview.iter(f"{SVG}path") if "crossing" in p.get("class", "").split()]
    ports = {port for p in crossings for port in p.get("data-ports").split()}
    assert ports == _boundary_tensors(three)
    titles = " ".join(p.find(f"{SVG}title").text for p in crossings)
    assert "quantize" in titles and "dequantize" in titles  # cumsum computes in float between two partitions


def test_partitions_collapse_to_boxes_with_counts(three):
    overview = _svgs(three.report.to_html())[0]
    boxes = {g.get("data-partition"): g for g in overview.iter(f"{SVG}g") if "partition" in g.get("class", "")}
    assert set(boxes) == {p.tag for p in three.report.partitions}
    for p in three.report.partitions:
        assert f"{len(p.nodes)} nodes" in "".join(t.text for t in boxes[p.tag].iter(f"{SVG}text"))


def test_hint_in_the_tooltip():
    # the documented table wants a softmax's class count to be a multiple of num_macs: 10 classes stay on the CPU
    torch.manual_seed(0)
    result = _lowered(nn.Sequential(nn.Linear(16, 10), nn.Softmax(-1)).eval(), (torch.randn(1, 16),),
                      constraints="documented")
    hinted = [r for r in result.report.rejections if r.hint]
    assert hinted, str(result.report)
    nodes = _nodes(_svgs(result.report.to_html()))
    for r in hinted:
        assert r.hint in nodes[r.node][0].find(f"{SVG}title").text


def test_vela_cycles_shade_the_nodes():
    result = _lowered(*three_partitions(), target="ethos-u55-128")
    nodes = _nodes(_svgs(result.report.to_html()))
    for p in result.report.partitions:
        layer_cycles = sum(la["cycles"] for la in p.estimate["layers"])
        costs = {n: float(nodes[n][0].get("data-cost")) for n in p.nodes if nodes[n][0].get("data-cost")}
        assert costs, f"no node of {p.tag} carries Vela's cycles"
        assert 0 < sum(costs.values()) <= layer_cycles
        costliest = max(costs, key=costs.get)  # Vela fuses conv + relu into one layer named after the relu
        assert "Conv2D" in nodes[costliest][0].find(f"{SVG}title").text
    overview = _svgs(result.report.to_html())[0]
    for g in overview.iter(f"{SVG}g"):
        if "partition" in g.get("class", "").split():  # the partition's layers of no node: its I/O transposes
            assert "layout transposes" in g.find(f"{SVG}title").text


def test_bundled_example_graph_is_whole():
    """CifarNet (max pooling with indices: getitem nodes inside the partition): every edge joins two drawn nodes,
    and every partition node is drawn once."""
    from executorch_neutron.models import zoo

    result = _lowered(*zoo.cifarnet())
    graph = result.report.graph
    assert all(e.src in graph.vertices and e.dst in graph.vertices for e in graph.edges)
    nodes = _nodes(_svgs(result.report.to_html()))
    assert all(len(nodes[n]) == 1 for p in result.report.partitions for n in p.nodes)


def test_a_neutron_estimate_shades_the_nodes_its_tflite_layers_end_at(three):
    """A per-layer estimate over a Neutron partition's TFLite operators (the shape Vela's has: output tensor name,
    cycles), as the report's `neutron_estimate` carries it: each operator's cycles land on the edge node that
    computes its output tensor; the operators no node computes (layout transposes) stay with the partition."""
    import copy

    from executorch_neutron.report.graph import apply_costs
    from executorch_neutron.tflite.reader import op_name, read_model, tensor_name

    report = copy.deepcopy(three.report)
    expected = {}
    for p in report.partitions:
        model = read_model(p.tflite)
        sub = model.subgraphs[0]
        layers = [{"name": tensor_name(sub, op.outputs[0]), "op": op_name(model, op), "cycles": 100 + i, "macs": 0}
                  for i, op in enumerate(sub.operators)]
        expected[p.tag] = sum(la["cycles"] for la in layers)
        p.estimate = {**p.estimate, "layers": layers, "cycles": expected[p.tag]}
    graph = report.graph  # the report's graph carries its own Neutron estimate already: start from no costs
    for v in graph.vertices.values():
        v.cost, v.layers = None, []
    for part in graph.partitions:
        part.unattributed_cost = 0
    graph = apply_costs(graph, report.partitions)
    for p in graph.partitions:
        costed = [graph.vertices[n].cost for n in p.nodes if graph.vertices[n].cost is not None]
        assert costed, f"no node of {p.tag} got a layer"
        assert sum(costed) + p.unattributed_cost == expected[p.tag]  # every layer counted once
    assert graph.cost_unit == "cycles (Neutron estimate)"
    assert "data-cost" in report.to_html()


class _CpuMultiOutput(nn.Module):
    """A convolution on the NPU, then a CPU op with two outputs (`sort`/`topk`: values and indices, written by
    to_executorch into `alloc` buffers given as keyword arguments)."""

    def __init__(self, op):
        super().__init__()
        self.conv, self.op = nn.Conv2d(3, 8, 3), op

    def forward(self, x):
        values, _ = self.op(self.conv(x).flatten(1))
        return values


@pytest.mark.parametrize("op", [lambda y: torch.sort(y, dim=1), lambda y: torch.topk(y, 5, dim=1)],
                         ids=["sort", "topk"])
def test_multi_output_cpu_op_is_drawn(op):
    torch.manual_seed(0)
    result = _lowered(_CpuMultiOutput(op).eval(), (torch.randn(1, 3, 10, 12),))
    cpu = [r.node for r in result.report.rejections]
    assert cpu, str(result.report)
    graph = result.report.graph
    assert all(e.src in graph.vertices and e.dst in graph.vertices for e in graph.edges)
    nodes = _nodes(_svgs(result.report.to_html()))
    assert all(len(nodes[n]) == 1 for n in cpu)
    assert not any(n.startswith("alloc") for n in nodes)  # out-variant buffers are no vertices


def test_a_top_level_node_named_like_a_partition_node(three):
    """to_executorch names the top-level graph's new nodes afresh, so a CPU node can bear the name of a node
    inside a partition: both are drawn, each where it runs, and every partition's graph renders."""
    import copy

    from executorch_neutron.report.graph import program_graph
    from executorch_neutron.report.graph_svg import overview_svg, partition_svg

    program = copy.deepcopy(three.edge_program.exported_program())
    inner = next(iter(lowered_modules(program.graph_module).values())).original_module
    taken = next(n.name for n in inner.graph.nodes if n.op == "call_function" and "convolution" in n.name)
    cpu = next(n for n in program.graph_module.graph.nodes if n.name == three.report.rejections[0].node)
    cpu._rename(taken)
    assert cpu.name == taken
    graph = program_graph(program, three.report.rejections)
    places = sorted(v.place for v in graph.vertices.values() if v.id.split("/")[-1] == taken)
    assert places == sorted(["cpu", three.report.partitions[0].tag]), places
    assert all(e.src in graph.vertices and e.dst in graph.vertices for e in graph.edges)
    overview_svg(graph)
    for p in graph.partitions:
        partition_svg(graph, p.tag)


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
def test_report_words_name_layers_and_formats(target):
    """A fused convolution is named after the convolution with its relu beside it (and its cycles shade the
    convolution, not the relu); the converter's boundary transposes are named as such; formats are words."""
    import re

    from executorch_neutron.models import zoo

    result = _lowered(*zoo.cifarnet(), target=target)
    report = result.report
    graph = report.graph
    convs = [v for v in graph.vertices.values() if v.op == "aten.convolution.default"]
    relus = [v for v in graph.vertices.values() if v.op == "aten.relu.default"]
    assert convs and relus
    assert all(v.cost for v in convs) and not any(v.cost for v in relus)
    texts = {"text": str(report), "markdown": report.to_markdown(), "html": report.to_html()}
    for kind, text in texts.items():
        assert not re.search(r"\bt\d+_(natural|channels_last|rank\d)", text), kind  # tensor names of the converter
        assert "formats [" not in text and "as given" in text, kind
        if kind != "text" or target == "imxrt700":  # the text report lists the Neutron estimate's top layers only
            assert f"{convs[0].id} + relu" in text, kind
    assert "inserted transpose to" in texts["markdown"]
    assert "aten_relu_default " not in texts["text"]


def _texts(g) -> list[str]:
    return [t.text for t in g.iter(f"{SVG}text")]


def test_nodes_show_shapes_and_cpu_reasons_and_crossings_their_bytes():
    """Shapes on every compute node, the CPU node's reason on the node itself (not only in its tooltip), and each
    crossing labelled with the int8 bytes it hands over (the reference: the tensor's shape in the lowered
    program)."""
    import math

    from executorch_neutron.report.render import human_bytes

    torch.manual_seed(0)
    result = _lowered(_CpuMultiOutput(lambda y: torch.sort(y, dim=1)).eval(), (torch.randn(1, 3, 10, 12),))
    report = result.report
    svgs = _svgs(report.to_html())
    nodes = _nodes(svgs)
    graph = report.graph
    for vid, v in graph.vertices.items():
        if v.shape is not None:
            assert "[" + ", ".join(map(str, v.shape)) + "]" in _texts(nodes[vid][0]), vid
    (r,) = report.rejections
    on_node = " ".join(_texts(nodes[r.node][0]))
    assert r.reason.split()[0] in on_node and len(on_node) > len(r.op.split(".")[1]) + 10, on_node
    crossings = [e for e in graph.edges if e.crossing]
    labels = [t.text for svg in svgs for t in svg.iter(f"{SVG}text") if t.get("class") == "xlabel"]
    for e in crossings:
        assert any(label.endswith(human_bytes(math.prod(e.shape))) for label in labels), (e, labels)


def test_a_deep_partition_is_laid_out_in_columns():
    from executorch_neutron.report.graph_svg import _COLUMN_H

    torch.manual_seed(0)
    layers = [m for _ in range(40) for m in (nn.Conv2d(4, 4, 1), nn.Sigmoid())]
    result = _lowered(nn.Sequential(*layers).eval(), (torch.randn(1, 4, 6, 5),))
    (part,) = _svgs(result.report.to_html())[1:]
    assert float(part.get("height")) <= _COLUMN_H + 100, part.get("height")
    assert float(part.get("width")) > 2 * max(float(r.get("width")) for r in part.iter(f"{SVG}rect"))

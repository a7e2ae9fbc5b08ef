"""The device header follows the NeutronGraph node's input/output order, matched by tensor index.

The SDK test double lets the node list its real inputs/outputs in any order (FAKE_NEUTRON_INPUT_ORDER/OUTPUT_ORDER)
while the converted graph keeps the partition's signature. Expected headers are written out by hand from the
payload contract: Neutron input i = node input i = graph input `order[i]`, so its format flag and delegate argument
are that graph input's. A second, independent check reads the converted model itself: the tensor behind node input i
must be the one whose shape the header's delegate argument carries.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_neutron_sdk as fake  # noqa: E402

from executorch_neutron.compile_spec import NeutronCompileSpec  # noqa: E402
from executorch_neutron.neutron.npu import ConvertedModelError, compile_partition  # noqa: E402
from executorch_neutron.neutron.npu.compile import node_header  # noqa: E402
from executorch_neutron.neutron.npu.extract import extract  # noqa: E402
from executorch_neutron.core.payload import Header, unpack  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from tflite_fixtures import GraphBuilder  # noqa: E402


def io_model(n_in: int, n_out: int) -> bytes:
    """n_in int8 inputs and n_out outputs, every tensor a different shape: a mixed-up map cannot look right.
    Output j = relu(input j % n_in), reshaped to its own shape by construction of distinct sizes."""
    g = GraphBuilder()
    ins = [g.tensor([1, 2 + i, 3 + 2 * i], np.int8, f"in_{i}", scale=0.1) for i in range(n_in)]
    outs = []
    for j in range(n_out):
        src = ins[j % n_in]
        shape = g.tensors[src].shape
        if j >= n_in:  # a second output of the same input: relu of relu, same shape but its own tensor
            src = outs[j - n_in]
        out = g.tensor(shape, np.int8, f"out_{j}", scale=0.1)
        g.op("relu", [src], [out])
        outs.append(out)
    return g.finish(ins, outs)


# graph header (graph order), node orders, expected device header (node order), all written by hand
CASES = {
    "1in_1out": (Header(1, (1,), (1,), (0,), (0,)), None, None,
                 Header(1, (1,), (1,), (0,), (0,))),
    "2in_swapped_1out": (Header(3, (1, 0), (0,), (0, 2), (0,)), [1, 0], None,
                         Header(3, (0, 1), (0,), (2, 0), (0,))),
    "1in_2out_swapped": (Header(1, (0,), (1, 0), (0,), (0, 1)), None, [1, 0],
                         Header(1, (0,), (0, 1), (0,), (1, 0))),
    "2in_2out_both_swapped": (Header(2, (1, 0), (0, 1), (0, 1), (0, 1)), [1, 0], [1, 0],
                              Header(2, (0, 1), (1, 0), (1, 0), (1, 0))),
    "3in_rotated_3out_rotated": (Header(4, (1, 0, 0), (0, 1, 1), (0, 2, 3), (0, 1, 2)), [2, 0, 1], [1, 2, 0],
                                 Header(4, (0, 1, 0), (1, 1, 0), (3, 0, 2), (1, 2, 0))),
    "3in_reversed_2out": (Header(3, (0, 1, 1), (1, 0), (2, 1, 0), (0, 1)), [2, 1, 0], None,
                          Header(3, (1, 1, 0), (1, 0), (0, 1, 2), (0, 1))),
    "3in_identity_3out_reversed": (Header(3, (0, 0, 1), (1, 0, 0), (0, 1, 2), (0, 1, 2)), None, [2, 1, 0],
                                   Header(3, (0, 0, 1), (0, 0, 1), (0, 1, 2), (2, 1, 0))),
}


@pytest.fixture
def sdk(tmp_path, monkeypatch):
    fake.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    return monkeypatch


def _set_order(monkeypatch, variable, order):
    if order is None:
        monkeypatch.delenv(variable, raising=False)
    else:
        monkeypatch.setenv(variable, ",".join(map(str, order)))


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_device_header_follows_the_node_order(sdk, case):
    graph_header, in_order, out_order, expected = case
    _set_order(sdk, "FAKE_NEUTRON_INPUT_ORDER", in_order)
    _set_order(sdk, "FAKE_NEUTRON_OUTPUT_ORDER", out_order)
    tflite = io_model(graph_header.n_inputs, graph_header.n_outputs)
    blob = compile_partition(tflite, graph_header, NeutronCompileSpec(), "neutron_0").blob
    assert unpack(blob).header == expected
    assert blob[:len(expected.to_bytes())] == expected.to_bytes()


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_neutron_input_reads_the_argument_holding_its_tensor(case):
    """Independent of the expected tables: emulate the device runtime on the converted model itself."""
    graph_header, in_order, out_order, _ = case
    tflite = io_model(graph_header.n_inputs, graph_header.n_outputs)
    converted = fake.neutron_graph_model(tflite, "ok", in_order, out_order)
    header = node_header(graph_header, extract(converted, graph_header.n_inputs, graph_header.n_outputs))
    source = schema.ModelT.InitFromPackedBuf(tflite, 0).subgraphs[0]
    model = schema.ModelT.InitFromPackedBuf(converted, 0).subgraphs[0]
    node = model.operators[0]
    # delegate argument k carries the source graph input that the graph header maps to k
    arg_shape = {graph_header.input_args[p]: list(source.tensors[t].shape) for p, t in enumerate(source.inputs)}
    out_shape = {graph_header.output_args[p]: list(source.tensors[t].shape) for p, t in enumerate(source.outputs)}
    for i in range(header.n_inputs):
        assert list(model.tensors[node.inputs[i]].shape) == arg_shape[header.input_args[i]]
    for j in range(header.n_outputs):
        assert list(model.tensors[node.outputs[j]].shape) == out_shape[header.output_args[j]]


BROKEN_NODES = {
    "foreign_input": "NeutronGraph input 1 is tensor .* 'stray_input', which is not one of the converted graph's inputs",
    "foreign_output": "NeutronGraph output 0 is tensor .* 'stray_output', which is not one of the converted graph's "
                      "outputs",
    "no_constants": "microcode operand is tensor 0 'in_0', a graph input, not a constant buffer",
    "graph_outputs": "converted graph has 2 inputs .* and 3 outputs .*'scratch'",
    "wrong_inputs": "node has 4 inputs \\[tensor 0 'in_0', tensor 4 'microcode'",
}


@pytest.mark.parametrize("mode", BROKEN_NODES, ids=BROKEN_NODES.keys())
def test_a_node_that_breaks_the_contract_is_named(mode):
    converted = fake.neutron_graph_model(io_model(2, 2), mode)
    with pytest.raises(ConvertedModelError, match=BROKEN_NODES[mode]) as info:
        extract(converted, n_inputs=2, n_outputs=2, name="neutron_4")
    assert "'neutron_4'" in str(info.value)

"""tflite/reader.py: operator names read the one right way, checked against LiteRT's own reading of the file and
against the TFLite schema's rule that the real builtin code is max(builtin_code, deprecated_builtin_code)."""

import pytest
import torch
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from torch import nn

from harness import Fn

from executorch_neutron import lower
from executorch_neutron.core.payload import unpack
from executorch_neutron.tflite.reader import builtin_code, op_name, opcode_name, read_model, tensor_name

B = schema.BuiltinOperator


def _opcode(builtin: int, deprecated: int, custom: bytes | None = None) -> schema.OperatorCodeT:
    oc = schema.OperatorCodeT()
    oc.builtinCode, oc.deprecatedBuiltinCode, oc.customCode = builtin, deprecated, custom
    return oc


# name: (builtin_code, deprecated_builtin_code, custom code, expected name); numbers from the TFLite schema
OPCODES = {
    "new_writer_small_code": (B.CONV_2D, B.CONV_2D, None, "CONV_2D"),
    "new_writer_code_above_127": (B.GELU, 127, None, "GELU"),  # deprecated field saturates at the placeholder 127
    "old_writer_only_deprecated": (0, B.MAX_POOL_2D, None, "MAX_POOL_2D"),  # builtin_code left at 0 (ADD)
    "custom_op": (B.CUSTOM, B.CUSTOM, b"NeutronGraph", "NeutronGraph"),
    "code_the_schema_lacks": (9999, 127, None, "9999"),
}


@pytest.mark.parametrize("case", OPCODES.values(), ids=OPCODES.keys())
def test_opcode_name(case):
    builtin, deprecated, custom, expected = case
    oc = _opcode(builtin, deprecated, custom)
    assert builtin_code(oc) == max(builtin, deprecated)
    assert opcode_name(oc) == expected


@pytest.fixture(scope="module")
def partition_tflite() -> bytes:
    torch.manual_seed(0)
    model = Fn(lambda s, a: torch.sigmoid(s.mods[1](torch.relu(s.mods[0](a)))), nn.Conv2d(3, 8, 3), nn.Conv2d(8, 16, 1))
    inputs = (torch.randn(1, 3, 9, 7),)
    result = lower(model.eval(), inputs, [inputs], reference=True)
    assert len(result.report.partitions) == 1
    return unpack(result.report.partitions[0].blob).tflite


def test_operator_and_tensor_names_match_litert(partition_tflite):
    model = read_model(partition_tflite)
    graph = model.subgraphs[0]
    it = Interpreter(model_content=partition_tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    litert_ops = it._get_ops_details()
    assert [op_name(model, op) for op in graph.operators] == [d["op_name"] for d in litert_ops]
    litert_tensors = {d["index"]: d["name"] for d in it.get_tensor_details()}
    for op, details in zip(graph.operators, litert_ops):
        assert [tensor_name(graph, t) for t in op.outputs] == [litert_tensors[t] for t in details["outputs"]]

"""convert/: the graph walk turns a partition's edge program into a TFLite that LiteRT reads as the partition:
its inputs, their shapes (channels-last where the format flag says so), one debug-handle entry per operator, and
the same bytes the backend packed into the .pte."""

import pytest
import torch
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from torch import nn

from harness import Fn

from executorch_neutron import lower
from executorch_neutron.convert import convert_program
from executorch_neutron.core.exported import lowered_modules, partition_tag
from executorch_neutron.ops.registry import CheckContext
from executorch_neutron.core.payload import unpack

# name: (model factory, inputs); distinct N, C, H, W so that a wrong permutation cannot pass
CASES = {
    "conv_plus_input_4d": (lambda: Fn(lambda s, a, b: torch.relu(s.mods[0](a) + b), nn.Conv2d(3, 8, 3)),
                           (torch.randn(1, 3, 9, 7), torch.randn(1, 8, 7, 5))),
    "linear_2d": (lambda: nn.Sequential(nn.Linear(24, 16), nn.ReLU()), (torch.randn(3, 24),)),
    "inputs_swapped": (lambda: Fn(lambda s, a, b: b * 2.0 + torch.relu(a)), (torch.randn(2, 16), torch.randn(2, 16))),
}


def _partitions(make, inputs):
    torch.manual_seed(0)
    result = lower(make().eval(), inputs, [inputs], reference=True)
    gm = result.edge_program.exported_program().graph_module
    return result.spec, list(lowered_modules(gm).values())


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_converted_partition_is_what_litert_reads(case):
    spec, modules = _partitions(*case)
    assert len(modules) == 1
    program = modules[0].original_module
    converted = convert_program(program, CheckContext.for_program(spec, program), partition_tag(program))

    it = Interpreter(model_content=converted.tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    user_inputs = [n for n in program.graph.nodes if n.op == "placeholder" and n.name in
                   program.graph_signature.user_inputs]
    details = it.get_input_details()
    assert len(details) == len(converted.input_formats) == len(converted.input_args)
    for detail, fmt, arg in zip(details, converted.input_formats, converted.input_args):
        n, *rest = user_inputs[arg].meta["val"].shape
        logical = [n, *rest]
        expected = [n, rest[1], rest[2], rest[0]] if fmt == 1 else logical  # NCHW -> NHWC when flagged
        assert list(detail["shape"]) == expected
        assert fmt in (0, 1) and (fmt == 0 or len(logical) == 4)
    assert len(converted.debug_handles) == len(it._get_ops_details())
    assert converted.n_args == len(user_inputs)
    assert unpack(modules[0].processed_bytes).tflite == converted.tflite  # what the backend packed

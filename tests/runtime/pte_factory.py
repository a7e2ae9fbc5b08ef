"""Test-only .pte factory: a stand-in partitioner + `NeutronBackend` BackendDetails for the runtime tests.

Run as a script in a SUBPROCESS ONLY (`python pte_factory.py OUT_DIR`): ExecuTorch finds a backend by the
*class name* of its BackendDetails subclass, so this stand-in `NeutronBackend` must never be imported into a
process that may also import the real `executorch_neutron.neutron.backend.NeutronBackend`.

The stand-in lowers element-wise graphs (add, sub, mul, relu; constant operands allowed) into a float32 or int8
TFLite (see tflite_fixtures.py) packed as a host-reference payload. When the compile spec asks for it, 4-D
tensors are computed channels-last (format flags 1) and the partition's inputs/outputs are listed in reverse
order in the TFLite, so that the header's argument maps are exercised.

For every case it writes `<case>.pte`, `<case>.pt` (inputs and the eager PyTorch outputs) and the partitions'
TFLite files `<case>.partition<k>.tflite` (with `<case>.partition<k>.json` holding the header).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from executorch.exir import to_edge_transform_and_lower
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tflite_fixtures import GraphBuilder  # noqa: E402

from executorch_neutron.core.payload import Header, Payload, pack  # noqa: E402

OPS = {exir_ops.edge.aten.add.Tensor: "add", exir_ops.edge.aten.sub.Tensor: "sub",
       exir_ops.edge.aten.mul.Tensor: "mul", exir_ops.edge.aten.relu.default: "relu"}
_OUT_DIR: Path | None = None
_COUNTER = [0]


class _Support(OperatorSupportBase):
    def is_node_supported(self, submodules, node) -> bool:
        return node.op == "call_function" and node.target in OPS


class StandInPartitioner(Partitioner):
    def __init__(self, options: dict):
        self.delegation_spec = DelegationSpec("NeutronBackend", [CompileSpec("test.options", json.dumps(options).encode())])

    def partition(self, exported_program) -> PartitionResult:
        parts = CapabilityBasedPartitioner(exported_program.graph_module, _Support(),
                                           allows_single_node_partition=True).propose_partitions()
        tags = {}
        for part in parts:
            tag = f"neutron_{part.id}"
            for node in part.nodes:
                node.meta["delegation_tag"] = tag
            tags[tag] = self.delegation_spec
        tag_constant_data(exported_program)
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)


def _constant(program, node):
    sig = program.graph_signature
    name = sig.inputs_to_parameters.get(node.name) or sig.inputs_to_buffers.get(node.name) \
        or sig.inputs_to_lifted_tensor_constants.get(node.name)
    if name is None:
        return None
    value = program.state_dict.get(name)
    return value if value is not None else program.constants[name]


class NeutronBackend(BackendDetails):
    """STAND-IN for tests (see the module docstring); not the project's backend."""

    @staticmethod
    def preprocess(edge_program, compile_specs) -> PreprocessResult:
        options = json.loads(bytes(compile_specs[0].value).decode())
        nhwc, reverse = options.get("channels_last", True), options.get("reverse", False)
        g = GraphBuilder()
        ids, user_inputs, formats_in = {}, [], []

        def tensor_for(node, data=None):
            val = node.meta["val"]
            shape, dtype = list(val.shape), {torch.float32: np.float32, torch.int8: np.int8}[val.dtype]
            four_d = nhwc and len(shape) == 4
            if four_d:
                shape = [shape[0], shape[2], shape[3], shape[1]]
                if data is not None:
                    data = np.transpose(data, (0, 2, 3, 1))
            scale = 1.0 if dtype == np.int8 else None
            return g.tensor(shape, dtype, node.name, data=data, scale=scale), int(four_d)

        for node in edge_program.graph.nodes:
            if node.op == "placeholder":
                const = _constant(edge_program, node)
                if const is None:
                    ids[node], flag = tensor_for(node)
                    user_inputs.append(ids[node])
                    formats_in.append(flag)
                else:
                    ids[node], _ = tensor_for(node, const.detach().numpy())
            elif node.op == "call_function":
                ids[node], _ = tensor_for(node)
                g.op(OPS[node.target], [ids[a] for a in node.args], [ids[node]])
            elif node.op == "output":
                outs = [ids[a] for a in node.args[0]]
                formats_out = [int(nhwc and len(a.meta["val"].shape) == 4) for a in node.args[0]]
        order_in, order_out = list(range(len(user_inputs))), list(range(len(outs)))
        if reverse:
            order_in.reverse()
            order_out.reverse()
        tflite = g.finish([user_inputs[i] for i in order_in], [outs[j] for j in order_out])
        header = Header(n_args=len(user_inputs), input_formats=tuple(formats_in[i] for i in order_in),
                        output_formats=tuple(formats_out[j] for j in order_out), input_args=tuple(order_in),
                        output_args=tuple(order_out))
        if _OUT_DIR is not None:
            stem = f"{options['case']}.partition{_COUNTER[0]}"
            (_OUT_DIR / f"{stem}.tflite").write_bytes(tflite)
            (_OUT_DIR / f"{stem}.json").write_text(json.dumps(header.__dict__))
            _COUNTER[0] += 1
        return PreprocessResult(processed_bytes=pack(Payload.reference(header, tflite)))


# ------------------------------------------------------------------------------------------------- test models


class AddBias(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.arange(3, dtype=torch.float32).reshape(1, 3, 1, 1) * 10)

    def forward(self, x):
        return torch.relu(x + self.bias)


class TwoInTwoOut(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b), a * b - a


class CpuBetween(torch.nn.Module):
    def forward(self, x):
        y = torch.floor(torch.relu(x * x))
        return y + y


class Int8Add(torch.nn.Module):
    def forward(self, a, b):
        return a + b


class Flat(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a * b)


def _cases():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    x = r(1, 3, 5, 7) * 20
    return {
        "add_bias": (AddBias(), (x,), {"channels_last": True}),
        "add_bias_nchw": (AddBias(), (x,), {"channels_last": False}),
        "two_in_two_out": (TwoInTwoOut(), (r(1, 4, 6, 5), r(1, 4, 6, 5)), {"channels_last": True, "reverse": True}),
        "cpu_between": (CpuBetween(), (r(2, 3, 4, 5) * 3,), {"channels_last": True}),
        "int8_add": (Int8Add(), (torch.randint(-128, 128, (1, 2, 3, 4), dtype=torch.int8, generator=g),
                                 torch.randint(-128, 128, (1, 2, 3, 4), dtype=torch.int8, generator=g)),
                     {"channels_last": True}),
        "flat_2d": (Flat(), (r(3, 8), r(3, 8)), {"channels_last": True, "reverse": True}),
        "channels_last_input": (AddBias(), (x.to(memory_format=torch.channels_last),), {"channels_last": True}),
    }


def build(out_dir: Path, names=None) -> None:
    global _OUT_DIR
    _OUT_DIR = out_dir
    for name, (module, inputs, options) in _cases().items():
        if names and name not in names:
            continue
        _COUNTER[0] = 0
        module.eval()
        with torch.no_grad():
            expected = module(*inputs)
        expected = list(expected) if isinstance(expected, tuple) else [expected]
        exported = torch.export.export(module, inputs)
        edge = to_edge_transform_and_lower(exported, partitioner=[StandInPartitioner({**options, "case": name})])
        pte = edge.to_executorch().buffer
        (out_dir / f"{name}.pte").write_bytes(pte)
        torch.save({"inputs": list(inputs), "expected": expected}, out_dir / f"{name}.pt")


if __name__ == "__main__":
    build(Path(sys.argv[1]), set(sys.argv[2:]))

"""use_profiling: the converter's console -> kernel index -> edge debug handles (the converter's profiling contract: npu/profile_map.py).

Two levels. The parser and matcher against hand-written console texts in the shapes the contract allows (expected
kernels written out by hand). Then the whole path: lower() with the SDK test double (which prints the documented
dumps for the partition it converts) and compare the delegate's debug_handle_map with the edge nodes' own debug
handles, read from the lowered module's original graph.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_neutron_sdk as fake  # noqa: E402

from executorch_neutron.neutron.npu.profile_map import Kernel, TfliteOp, match_kernel, parse_kernels  # noqa: E402

KERNEL_TENSORS = """
Graphs:
Name: main
  Type: CONV_2D
NeutronGraph "subgraph_000":
  NeutronOperator "subgraph_001":
    Operators:
      CONV_2D
    Kernels:
      Conv2DStandardV2
        Inputs:
          [0]: x
        Outputs:
          [0]: y/part0
      Conv2DPointwise
        Inputs:
          [0]: y/part0
        Outputs:
          [0]: y
  NeutronOperator "subgraph_002":
    Operators:
      MAX_POOL_2D
    Kernels:
      MaxPool Inputs: y; Outputs: z

====================
"""

NXP_SECTIONS = """
Name: subgraph_001
  Inputs:
    [0]: x
  Outputs:
    [0]: y
  Tensors:
    [0]: x
Name: subgraph_002
  Inputs:
    [0]: y
  Outputs:
    [0]: z
  Tensors:
NeutronGraph "subgraph_000":
  NeutronOperator "subgraph_001":
    Operators:
      PAD
      CONV_2D
    Kernels:
      Pad
      Conv2DStandardV2
  NeutronOperator "subgraph_002":
    Operators:
      MAX_POOL_2D
    Kernels:
      MaxPool
"""

PARSE = {
    "kernel_tensors": (KERNEL_TENSORS, [("Conv2DStandardV2", ["x"], ["y/part0"]),
                                        ("Conv2DPointwise", ["y/part0"], ["y"]),
                                        ("MaxPool", ["y"], ["z"])]),
    "nxp_sections": (NXP_SECTIONS, [("Pad", ["x"], ["y"]), ("Conv2DStandardV2", ["x"], ["y"]),
                                    ("MaxPool", ["y"], ["z"])]),
    "printed_twice": (KERNEL_TENSORS + KERNEL_TENSORS, [("Conv2DStandardV2", ["x"], ["y/part0"]),
                                                        ("Conv2DPointwise", ["y/part0"], ["y"]),
                                                        ("MaxPool", ["y"], ["z"])]),
    "no_dump": ("converter says hello\nKernels:\n  Foo\n", []),
}


@pytest.mark.parametrize("case", PARSE.values(), ids=PARSE.keys())
def test_parse_kernels(case):
    console, expected = case
    assert [(k.kind, k.inputs, k.outputs) for k in parse_kernels(console)] == expected


OPS = [TfliteOp("TRANSPOSE", ("x",), ("x_nhwc",)), TfliteOp("CONV_2D", ("x_nhwc",), ("y",)),
       TfliteOp("MAX_POOL_2D", ("y",), ("p",)), TfliteOp("AVERAGE_POOL_2D", ("y",), ("q",)),
       TfliteOp("ADD", ("p", "q"), ("s",))]
MATCH = {
    "exact_output": (Kernel("Conv2DStandardV2", 1, ["x_nhwc"], ["y"]), (1,)),
    "split_output": (Kernel("Conv2DStandardV2", 1, ["x_nhwc"], ["y/part0"]), (1,)),  # <tflite name>/<suffix>
    "suffix_of_output": (Kernel("Conv2DPointwise", 1, ["y/part0"], ["y/final"]), (1,)),
    "our_transpose": (Kernel("TransposeCHW", 1, ["x"], ["x_nhwc"]), (0,)),
    "inserted_transpose": (Kernel("TransposeCHW", 1, ["x"], ["x/nhwc"]), ()),
    "inserted_pad": (Kernel("Pad", 1, ["y"], ["y/padded"]), ()),
    "renamed_output_one_reader": (Kernel("Add", 1, ["p", "q"], ["k9"]), (4,)),
    "renamed_output_named_by_kind": (Kernel("MaxPool", 1, ["y"], ["k7"]), (2,)),
    "renamed_output_ambiguous": (Kernel("AvgPool", 1, ["y"], ["k8"]), ()),  # AvgPool !~ AVERAGE_POOL_2D: unmapped
    "nothing_known": (Kernel("Softmax", 1, ["u"], ["v"]), ()),
}


@pytest.mark.parametrize("case", MATCH.values(), ids=MATCH.keys())
def test_match_kernel(case):
    kernel, expected = case
    assert match_kernel(kernel, OPS) == expected


# ------------------------------------------------------------------------------------------ whole path


class ConvTwoPools(nn.Module):
    """conv+relu, then a max pool and an average pool of the same tensor: two kernels reading one input."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return F.max_pool2d(y, 2), F.avg_pool2d(y, 2)


def _lower_with_fake(tmp_path, monkeypatch, style):
    from executorch.exir.lowered_backend_module import LoweredBackendModule

    from executorch_neutron import lower

    fake.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    monkeypatch.setenv("FAKE_NEUTRON_PROFILE_STYLE", style)
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 6, 10),)
    result = lower(ConvTwoPools().eval(), inputs, [inputs], use_profiling=True)
    gm = result.edge_program.exported_program().graph_module
    (lowered,) = [m for m in gm.modules() if isinstance(m, LoweredBackendModule)]
    handles = {}
    for node in lowered.original_module.graph.nodes:
        if node.op == "call_function" and "debug_handle" in node.meta:
            handles.setdefault(str(node.target).split(".")[1] if "." in str(node.target) else str(node.target),
                               []).append(node.meta["debug_handle"])
    return lowered.meta["debug_handle_map"], handles


def test_profiling_map_from_the_double(tmp_path, monkeypatch):
    debug_map, handles = _lower_with_fake(tmp_path, monkeypatch, "kernel_tensors")
    conv, relu = handles["convolution"][0], handles["relu"][0]
    maxpool = handles["max_pool2d_with_indices"][0] if "max_pool2d_with_indices" in handles else handles["max_pool2d"][0]
    avgpool = handles["avg_pool2d"][0]
    values = list(debug_map.values())
    keys = list(debug_map.keys())
    assert keys == list(range(len(keys))) and values[-1] == ()  # last: the profile dump
    assert values[0] == ()  # the double's inserted TransposeCHW on the graph input
    conv_kernels = [v for v in values if v == tuple(sorted((conv, relu)))]
    assert len(conv_kernels) >= 2  # CONV_2D became two kernels, both computing conv+relu
    assert (maxpool,) in values and (avgpool,) in values


def test_profiling_map_leaves_ambiguous_kernels_unmapped(tmp_path, monkeypatch):
    debug_map, handles = _lower_with_fake(tmp_path, monkeypatch, "renamed_outputs")
    maxpool = handles["max_pool2d_with_indices"][0] if "max_pool2d_with_indices" in handles else handles["max_pool2d"][0]
    avgpool = handles["avg_pool2d"][0]
    values = list(debug_map.values())
    assert (maxpool,) in values  # MaxPool ~ MAX_POOL_2D picks it among the two readers of one tensor
    assert (avgpool,) not in values  # AvgPool does not name AVERAGE_POOL_2D: unmapped, not guessed


def test_profiling_without_a_kernel_list_warns(tmp_path, monkeypatch, caplog):
    from executorch_neutron.compile_spec import NeutronCompileSpec
    from executorch_neutron.neutron.npu import compile_partition
    from executorch_neutron.core.payload import Header

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    from tflite_fixtures import add_relu_int8

    fake.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    header = Header(2, (0, 0), (0,), (0, 1), (0,))
    spec = NeutronCompileSpec(use_profiling=True)
    for style, expected in (("kernel_tensors", {0: (), 1: (5,), 2: (6,), 3: ()}), ("none", {})):
        monkeypatch.setenv("FAKE_NEUTRON_PROFILE_STYLE", style)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="executorch_neutron"):
            out = compile_partition(add_relu_int8([1, 4]), header, spec, "neutron_2", [(5,), (6,)])
        # ADD (debug handle 5) and RELU (6) after the double's inserted transpose; last key: the profile dump
        assert out.debug_handle_map == expected
        warned = [r.getMessage() for r in caplog.records if "no kernel list" in r.getMessage()]
        assert bool(warned) == (style == "none") and all("'neutron_2'" in w for w in warned)

"""TEST DOUBLE of NXP's eIQ Neutron SDK (`eiq_neutron_sdk`): the only fake in the test suite.

`install(directory, api=..., version=...)` writes a tiny `eiq_neutron_sdk` package into `directory` in one of the
SDK's two API shapes (docs/guide/sources.md): `api="compiler"` (default, SDK after 3.2.2: `neutron_compiler.compileModel`, whose
options include `dumpMicrocode`), `api="converter"` (SDK <= 3.2.2: `neutron_converter.convertModel`, without
`dumpMicrocode`), or `api="both"`; plus `neutron_library_utils`, and a `.dist-info` whose metadata carries `version`
(None: no metadata, as an SDK put on the path by hand). Tests put `directory` on sys.path (the converter child
process inherits it). The fake converter builds, from the partition's TFLite, a TFLite with one `NeutronGraph`
custom operator laid out as the payload contract says (real inputs + microcode, weights, kernels; real outputs +
scratch [+ profile + debug]). The graph's inputs and outputs keep the source's order and tensor names; the node
may list its real inputs and outputs in another order (as the real converter may). Its microcode is NOT device
code: a 32-byte preamble with the documented words followed by a digest of the input.

Behaviour is chosen by environment variables, because the converter runs in a child process:
    FAKE_NEUTRON_MODE    ok (default) | profile (3 extra outputs -> version 1) | abort (os.abort) | raise |
                         two_ops | not_custom | bad_magic | bad_microcode_size | bad_weights_size | wrong_inputs |
                         wrong_outputs | garbage | foreign_input (a node input that is no graph input) |
                         foreign_output | no_constants (graph inputs where microcode/weights/kernels belong) |
                         graph_outputs (one graph output too many)
    FAKE_NEUTRON_INPUT_ORDER   e.g. "2,0,1": node input k is graph input 2, 0, 1 (default: graph order)
    FAKE_NEUTRON_OUTPUT_ORDER  the same for the node's real outputs
    FAKE_NEUTRON_RECORD  path of a JSON file receiving the target and compilation options the converter saw
    FAKE_NEUTRON_PROFILE_STYLE  with useProfiling, how the console lists kernel tensors (see `profiling_console`):
                         kernel_tensors (default) | section_tensors | renamed_outputs | none (no dumps)

With useProfiling the node gets the profile and debug outputs (payload version 1) and the console (fd 1) holds
the two graph dumps of the converter's profiling contract (npu/profile_map.py), generated from the source TFLite by `profiling_console`.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from pathlib import Path

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

MAGIC = 0x64434D6E
FAKE_TARGETS = ("imxrt700",)
WEIGHTS = bytes(range(37))  # deliberately not a multiple of 16: exercises section padding
KERNELS = bytes(range(100, 121))
SCRATCH_BYTES, PROFILE_BYTES = 256, 64  # int8 scratch, profile and debug outputs of the NeutronGraph node


class FakeCompilationOpts:
    """Holds exactly the option names of the legacy API shape; assigning an unknown name fails like the real
    binding."""

    _NAMES = ("minNumOpsPerGraph", "excludeGraphPasses", "fetchConstantsToSRAM", "dumpKernelSelectionCode",
              "useProfiling", "dumpAfterImport", "dumpAfterGenerate", "verbose")

    def __init__(self):
        for name in self._NAMES:
            object.__setattr__(self, name, None)

    def __setattr__(self, name, value):
        if name not in self._NAMES:
            raise AttributeError(f"FakeCompilationOpts has no attribute {name!r}")
        object.__setattr__(self, name, value)


class FakeCompilerOpts(FakeCompilationOpts):
    """The option names of the current API shape (`neutron_compiler`): the legacy ones plus `dumpMicrocode`."""

    _NAMES = FakeCompilationOpts._NAMES + ("dumpMicrocode",)


class FakeCompilationContext:
    OPTS = FakeCompilationOpts

    def __init__(self):
        self.targetOpts = None
        self.compilationOpts = self.OPTS()


class FakeCompilerContext(FakeCompilationContext):
    OPTS = FakeCompilerOpts


class FakeNeutronConverter:
    """Stands in for `eiq_neutron_sdk.neutron_converter` (SDK <= 3.2.2)."""

    API = "neutron_converter.convertModel"
    CompilationContext = FakeCompilationContext

    @staticmethod
    def getNeutronTarget(name):
        return {"fake_target": name}

    @classmethod
    def convertModel(cls, model_as_list, cctx):
        return _convert(bytes(model_as_list), cctx, cls.API)


class FakeNeutronCompiler:
    """Stands in for `eiq_neutron_sdk.neutron_compiler` (SDK after 3.2.2): the same converter behind
    `compileModel`."""

    API = "neutron_compiler.compileModel"
    CompilationContext = FakeCompilerContext
    getNeutronTarget = FakeNeutronConverter.getNeutronTarget

    @classmethod
    def compileModel(cls, model_as_list, cctx):
        return _convert(bytes(model_as_list), cctx, cls.API)


def _convert(data: bytes, cctx, api: str):
    """What both API shapes do: record what they saw, print the profiling dumps, write files, convert."""
    opts = cctx.compilationOpts
    record = os.environ.get("FAKE_NEUTRON_RECORD")
    if record:
        Path(record).write_text(json.dumps({
            "api": api,
            "target": cctx.targetOpts,
            "options": {n: getattr(opts, n) for n in type(opts)._NAMES},
            "input_size": len(data),
        }, sort_keys=True))
    if opts.useProfiling:
        style = os.environ.get("FAKE_NEUTRON_PROFILE_STYLE", "kernel_tensors")
        os.write(1, b"FAKE-PROFILE fd1: graph dumps follow\n" + profiling_console(data, style).encode())
        os.write(2, b"FAKE-PROFILE fd2: profiling microcode\n")
    if opts.dumpKernelSelectionCode:
        Path("_kernel_selection.c").write_text("/* fake kernel selection */\n")
    mode = os.environ.get("FAKE_NEUTRON_MODE", "ok")
    if mode == "abort":
        sys.stdout.flush()
        os.abort()
    if mode == "raise":
        raise RuntimeError("fake converter refused the model")
    if mode == "garbage":
        return list(b"not a flatbuffer at all")
    if opts.useProfiling and mode == "ok":
        mode = "profile"
    return list(neutron_graph_model(data, mode, _order("FAKE_NEUTRON_INPUT_ORDER"),
                                    _order("FAKE_NEUTRON_OUTPUT_ORDER")))


def _order(variable: str):
    text = os.environ.get(variable, "").strip()
    return [int(v) for v in text.split(",")] if text else None


class FakeNeutronLibraryUtils:
    """Stands in for `eiq_neutron_sdk.neutron_library_utils`."""

    @staticmethod
    def isNeutronTarget(name):
        return name in FAKE_TARGETS

    @staticmethod
    def getNeutronTargets():
        return list(FAKE_TARGETS)


def fake_microcode(source: bytes, n_in: int, n_out: int, weights: bytes, mode: str = "ok") -> bytes:
    """A 15-word preamble as NXP's device runtime reads it (magic; word 6 microcode size, 7 weights size; word 9 the
    scratch output's bytes; version 0: 10 prefetch buffer, 11-12 input/output counts; version 1 (profile): 10-11
    profile and debug bytes, 12 prefetch buffer, 13-14 counts), then a digest of the input: 73 bytes, not a multiple
    of 16."""
    body = hashlib.sha256(source).digest()[:13]
    size = 60 + len(body)
    words = [MAGIC, n_in, n_out, 0, 0, 0, size, len(weights), 0, SCRATCH_BYTES, 0, n_in, n_out, 0, 0]
    if mode == "profile":
        words[10:15] = [PROFILE_BYTES, PROFILE_BYTES, 0, n_in, n_out]
    if mode == "bad_magic":
        words[0] = 0xDEADBEEF
    if mode == "bad_microcode_size":
        words[6] = size + 16
    if mode == "bad_weights_size":
        words[7] = len(weights) + 1
    return struct.pack("<15I", *words) + body


def neutron_graph_model(source: bytes, mode: str = "ok", input_order=None, output_order=None) -> bytes:
    """The converted model for the TFLite `source`, shaped by `mode` (see the module docstring). The node's real
    input k is graph input `input_order[k]` (default: graph order); the same for outputs."""
    src = schema.ModelT.InitFromPackedBuf(source, 0)
    sg_in = src.subgraphs[0]
    real_in = [sg_in.tensors[i] for i in sg_in.inputs]
    real_out = [sg_in.tensors[i] for i in sg_in.outputs]
    microcode = fake_microcode(source, len(real_in), len(real_out), WEIGHTS, mode)
    buffers = [schema.BufferT()]
    tensors = []

    def add(name, shape, data=None, ttype=schema.TensorType.INT8, like=None):
        t = schema.TensorT()
        if like is not None:
            t.shape, t.type, t.quantization = list(like.shape), like.type, like.quantization
        else:
            t.shape, t.type = list(shape), ttype
        t.name = like.name if like is not None else name
        t.buffer = 0
        if data is not None:
            b = schema.BufferT()
            b.data = np.frombuffer(data, dtype=np.uint8).copy()
            buffers.append(b)
            t.buffer = len(buffers) - 1
        tensors.append(t)
        return len(tensors) - 1

    ins = [add(f"in{i}", None, like=t) for i, t in enumerate(real_in)]
    outs = [add(f"out{i}", None, like=t) for i, t in enumerate(real_out)]
    consts = [add("microcode", [len(microcode)], microcode, schema.TensorType.UINT8),
              add("weights", [len(WEIGHTS)], WEIGHTS, schema.TensorType.UINT8),
              add("kernels", [len(KERNELS)], KERNELS, schema.TensorType.UINT8)]
    extras = [add("scratch", [SCRATCH_BYTES])]
    if mode == "profile":
        extras += [add("profile", [PROFILE_BYTES]), add("debug", [PROFILE_BYTES])]
    if mode == "wrong_outputs":
        extras += [add("surplus", [8])]
    node_ins = [ins[i] for i in (input_order if input_order is not None else range(len(ins)))]
    node_outs = [outs[i] for i in (output_order if output_order is not None else range(len(outs)))]
    graph_outs = list(outs)
    if mode == "foreign_input":
        node_ins[-1] = add("stray_input", [4])
    if mode == "foreign_output":
        node_outs[0] = add("stray_output", [4])
    if mode == "no_constants":
        consts = [ins[0]] * 3
    if mode == "graph_outputs":
        graph_outs.append(extras[0])
    node_inputs = node_ins + consts if mode != "wrong_inputs" else node_ins[:-1] + consts
    codes = [schema.OperatorCodeT()]
    codes[0].builtinCode = codes[0].deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    codes[0].customCode = "NeutronGraph" if mode != "not_custom" else "SomethingElse"
    codes[0].version = 1
    ops = [_op(0, node_inputs, node_outs + extras)]
    if mode == "two_ops":
        ops.append(_op(0, node_inputs, node_outs + extras))
    sg = schema.SubGraphT()
    sg.tensors, sg.inputs, sg.outputs, sg.operators, sg.name = tensors, ins, graph_outs, ops, "main"
    model = schema.ModelT()
    model.version, model.operatorCodes, model.subgraphs, model.buffers = 3, codes, [sg], buffers
    model.description = "fake eIQ Neutron converter output"
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


# TFLite builtin -> the kernel kind the double prints; CONV_2D becomes two kernels (`<out>/part0`, then `<out>`)
KERNEL_KINDS = {"CONV_2D": "Conv2DStandardV2", "DEPTHWISE_CONV_2D": "Conv2DDepthwiseV2", "ADD": "Add",
                "SUB": "Sub", "MUL": "Mul", "RELU": "Relu", "MAX_POOL_2D": "MaxPool", "AVERAGE_POOL_2D": "AvgPool",
                "TRANSPOSE": "TransposeCHW", "PAD": "Pad", "CONCATENATION": "Concat", "FULLY_CONNECTED": "FullyConnected"}


def profiling_console(source: bytes, style: str = "kernel_tensors") -> str:
    """The console of a profiling conversion of `source`: the imported graph, then the converted graph.

    The converted graph starts with an inserted TransposeCHW kernel on the first graph input (it maps to nothing),
    then one NeutronOperator block per source operator with its kernels in execution order.
    kernel_tensors: each kernel lists `Inputs:` / `Outputs:` as `[k]: name` lines;
    section_tensors: kernels are bare kinds and each block's tensors are in a `Name: subgraph_<N>` section;
    renamed_outputs: like kernel_tensors, but kernel outputs get converter names (`k<i>_out`), so only inputs match;
    none: no dumps at all (a converter that prints something else).
    """
    if style == "none":
        return "converter: done\n"
    model = schema.ModelT.InitFromPackedBuf(source, 0)
    sg = model.subgraphs[0]
    builtin = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}

    def name(i):
        raw = sg.tensors[i].name
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def constant(i):
        b = sg.tensors[i].buffer
        return 0 < b < len(model.buffers) and model.buffers[b].data is not None and len(model.buffers[b].data) > 0

    ops = []
    for op in sg.operators:
        code = model.operatorCodes[op.opcodeIndex]
        kind = builtin[max(code.builtinCode, code.deprecatedBuiltinCode)]
        ops.append((kind, [name(i) for i in op.inputs if i >= 0 and not constant(i)], [name(i) for i in op.outputs]))
    lines = ["Graphs:", "Name: main"]
    for loc, (kind, ins, outs) in enumerate(ops):
        lines += [f"  Type: {kind}", "    Inputs:"] + [f"      [{k}]: {n}" for k, n in enumerate(ins)]
        lines += ["    Outputs:"] + [f"      [{k}]: {n}" for k, n in enumerate(outs)] + [f"    Location: {loc}"]
    first_input = name(sg.inputs[0])
    blocks = [("TRANSPOSE", [("TransposeCHW", [first_input], [first_input + "/nhwc"])])]
    for kind, ins, outs in ops:
        kernel = KERNEL_KINDS.get(kind, kind.title().replace("_", ""))
        if kind == "CONV_2D":
            part = [o + "/part0" for o in outs]
            blocks.append((kind, [(kernel, ins, part), (kernel, part, outs)]))
        else:
            blocks.append((kind, [(kernel, ins, outs)]))
    counter = 0
    if style == "renamed_outputs":
        renamed = []
        for kind, kernels in blocks:
            fixed = []
            for kernel, ins, outs in kernels:
                fixed.append((kernel, ins, [f"k{counter}_out" for _ in outs]))
                counter += 1
            renamed.append((kind, fixed))
        blocks = renamed
    lines += ["", "= Generate =", "Graphs:"]
    if style == "section_tensors":
        for number, (kind, kernels) in enumerate(blocks, start=1):
            ins, outs = kernels[0][1], kernels[-1][2]
            lines += [f"Name: subgraph_{number:03d}", "  Inputs:"] + [f"    [{k}]: {n}" for k, n in enumerate(ins)]
            lines += ["  Outputs:"] + [f"    [{k}]: {n}" for k, n in enumerate(outs)] + ["  Tensors:", "    ..."]
    lines.append('NeutronGraph "subgraph_000":')
    for number, (kind, kernels) in enumerate(blocks, start=1):
        lines += [f'  NeutronOperator "subgraph_{number:03d}":', "    Operators:", f"      {kind}", "    Kernels:"]
        for kernel, ins, outs in kernels:
            lines.append(f"      {kernel}")
            if style != "section_tensors":
                lines += ["        Inputs:"] + [f"          [{k}]: {n}" for k, n in enumerate(ins)]
                lines += ["        Outputs:"] + [f"          [{k}]: {n}" for k, n in enumerate(outs)]
    lines += ["", "=" * 20, "Statistics for NeutronGraph \"subgraph_000\":", ""]
    return "\n".join(lines) + "\n"


def _op(opcode_index, inputs, outputs):
    op = schema.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = opcode_index, list(inputs), list(outputs)
    return op


API_MODULES = {"compiler": ("neutron_compiler",), "converter": ("neutron_converter",),
               "both": ("neutron_compiler", "neutron_converter")}
_CLASSES = {"neutron_compiler": "FakeNeutronCompiler", "neutron_converter": "FakeNeutronConverter"}
_ENTRY = {"neutron_compiler": "compileModel", "neutron_converter": "convertModel"}


def install(directory: Path, api: str = "compiler", version: str | None = "3.3.0") -> Path:
    """Write an `eiq_neutron_sdk` package into `directory` in the API shape `api` ("compiler", "converter" or
    "both"), with distribution metadata saying `version` (None: none); returns `directory`."""
    package = Path(directory) / "eiq_neutron_sdk"
    package.mkdir(parents=True, exist_ok=True)
    here = str(Path(__file__).resolve().parent)
    preamble = f"import sys\nif {here!r} not in sys.path:\n    sys.path.insert(0, {here!r})\n"
    (package / "__init__.py").write_text('"""TEST DOUBLE: serves tests/npu/fake_neutron_sdk.py as eiq_neutron_sdk."""\n')
    for module in API_MODULES[api]:
        (package / f"{module}.py").write_text(
            f'"""TEST DOUBLE of eiq_neutron_sdk.{module}."""\n{preamble}'
            f"from fake_neutron_sdk import {_CLASSES[module]} as _impl\n"
            f"CompilationContext = _impl.CompilationContext\ngetNeutronTarget = _impl.getNeutronTarget\n"
            f"{_ENTRY[module]} = _impl.{_ENTRY[module]}\n")
    (package / "neutron_library_utils.py").write_text(
        f'"""TEST DOUBLE of eiq_neutron_sdk.neutron_library_utils."""\n{preamble}'
        "from fake_neutron_sdk import FakeNeutronLibraryUtils as _impl\n"
        "isNeutronTarget = _impl.isNeutronTarget\ngetNeutronTargets = _impl.getNeutronTargets\n")
    for old in Path(directory).glob("eiq_neutron_sdk-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    if version is not None:
        info = Path(directory) / f"eiq_neutron_sdk-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: eiq-neutron-sdk\nVersion: {version}\n")
        (info / "top_level.txt").write_text("eiq_neutron_sdk\n")
        (info / "RECORD").write_text("eiq_neutron_sdk/__init__.py,,\n")
    return Path(directory)

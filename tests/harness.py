"""Test harness: quantize -> lower -> run the partition TFLite in LiteRT -> compare with PyTorch's quantized model.

`lower_and_run` goes through the whole `lower()`; `convert_and_run` stops at the converter (edge program -> TFLite
-> LiteRT, no backend call, payload or .pte), for the fast tier. The reference for every int8 result is PyTorch's
own quantized model (`convert_pt2e`, kept in `LoweringResult.quantized_model`) on the same inputs; comparisons
count output quantization steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from executorch.exir import to_edge_transform_and_lower
from executorch.exir.backend.partitioner import Partitioner, PartitionResult

from executorch_neutron import lower
from executorch_neutron.convert import convert_program
from executorch_neutron.lowering import LoweringResult, quantize
from executorch_neutron.core.payload import unpack
from executorch_neutron.ops.registry import CheckContext
from executorch_neutron.pipeline import assemble, resolve_spec
from executorch_neutron.runtime import run
from executorch_neutron.tflite.layout import from_channels_last, to_channels_last
from executorch_neutron.models.zoo import calibration


class Fn(torch.nn.Module):
    """A model from a function `fn(self, *inputs)`; its submodules are reachable as `self.mods[i]`."""

    def __init__(self, fn, *modules):
        super().__init__()
        self.fn = fn
        self.mods = torch.nn.ModuleList(modules)

    def forward(self, *x):
        return self.fn(self, *x)


class Param(torch.nn.Module):
    """x <op> a learned parameter of shape `shape` (quantized per tensor as an activation operand)."""

    def __init__(self, fn, *shape):
        super().__init__()
        self.fn = fn
        self.p = torch.nn.Parameter(torch.randn(*shape))

    def forward(self, a):
        return self.fn(a, self.p)


def run_tflite(tflite: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a TFLite flatbuffer with LiteRT's reference kernels on already-quantized, physically laid-out inputs."""
    it = Interpreter(model_content=tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for detail, x in zip(it.get_input_details(), inputs):
        it.set_tensor(detail["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def io_quant(tflite: bytes):
    it = Interpreter(model_content=tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    return ([d["quantization"] for d in it.get_input_details()], [d["quantization"] for d in it.get_output_details()])


def quantize_np(x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    return np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int8)


to_physical = to_channels_last
from_physical = from_channels_last


def model_output_qparams(quantized_model) -> list[tuple[float, int]]:
    """(scale, zero point) of each output of PyTorch's quantized model: the dequantize node that produces it."""
    out = next(n for n in quantized_model.graph.nodes if n.op == "output")
    args = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
    params = []
    for a in args:
        assert "dequantize_per_tensor" in str(a.target), f"output {a.name} is not dequantized per tensor"
        params.append((float(a.args[1]), int(a.args[2])))
    return params


@dataclass
class RunResult:
    result: LoweringResult
    outputs: list[np.ndarray]  # int8, PyTorch layout, from LiteRT running the partition TFLite
    references: list[np.ndarray]  # int8: PyTorch's quantized model, quantized with the same output parameters
    output_scales: list[float]
    output_zero_points: list[int]

    @property
    def output(self) -> np.ndarray:
        return self.outputs[0]

    @property
    def reference(self) -> np.ndarray:
        return self.references[0]

    @property
    def output_scale(self) -> float:
        return self.output_scales[0]

    @property
    def output_zero_point(self) -> int:
        return self.output_zero_points[0]

    @property
    def delegated_ops(self) -> dict[str, int]:
        return dict(self.result.report.delegated_ops)

    @property
    def rejections(self):
        return self.result.report.rejections


def lower_and_run(module, inputs, calib=None, **spec) -> RunResult:
    """Lower a single-partition model whose partition takes the model inputs and gives the model outputs."""
    inputs = tuple(inputs)
    calib = calib if calib is not None else [inputs] + calibration(inputs, 4)
    result = lower(module, inputs, calib, **spec)
    parts = result.report.partitions
    assert len(parts) == 1, f"expected one partition, got {len(parts)}:\n{result.report}"
    payload = unpack(parts[0].blob)
    tflite = payload.tflite
    in_q, out_q = io_quant(tflite)
    h = payload.header
    xs = [to_physical(quantize_np(inputs[h.input_args[i]].numpy(), *in_q[i]), h.input_formats[i])
          for i in range(h.n_inputs)]
    outs = [from_physical(o, h.output_formats[j]) for j, o in enumerate(run_tflite(tflite, xs))]
    with torch.no_grad():
        ref = result.quantized_model(*inputs)
    ref = ref if isinstance(ref, (tuple, list)) else (ref,)
    # the reference is quantized with PyTorch's own output parameters, and the TFLite must carry the same ones
    model_q = [model_output_qparams(result.quantized_model)[h.output_args[j]] for j in range(h.n_outputs)]
    for j, ((s, z), (ts, tz)) in enumerate(zip(model_q, out_q)):
        assert abs(ts - s) <= 1e-6 * s and tz == z, (
            f"output {j}: TFLite quantization ({ts}, {tz}) != PyTorch's quantized model ({s}, {z})")
    refs = [quantize_np(ref[h.output_args[j]].numpy(), *model_q[j]) for j in range(h.n_outputs)]
    return RunResult(result, outs, refs, [q[0] for q in model_q], [q[1] for q in model_q])


def steps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(np.int32) - b.astype(np.int32))


def assert_within_steps(out: np.ndarray, ref: np.ndarray, steps_allowed: int = 1, scale: float | None = None):
    assert out.shape == ref.shape, f"shape {out.shape} != reference {ref.shape}"
    d = steps(out, ref)
    worst = int(d.max()) if d.size else 0
    assert worst <= steps_allowed, (
        f"max error {worst} quantization steps (scale {scale}) > {steps_allowed}; "
        f"{(d <= 1).mean() * 100:.2f}% of elements within 1 step"
    )


def pte_steps(result: LoweringResult, samples) -> int:
    """The largest difference, in steps of the output's quantization, between the .pte run by the host runtime and
    PyTorch's quantized model (`result.quantized_model`, convert_pt2e's) over `samples` (input tuples); one output."""
    (scale, zp), = model_output_qparams(result.quantized_model)
    worst = 0
    for x in samples:
        with torch.no_grad():
            ref = quantize_np(result.quantized_model(*x).numpy(), scale, zp)
        out = quantize_np(run(result.pte, x)[0].numpy(), scale, zp)
        assert out.shape == ref.shape, f"shape {out.shape} != reference {ref.shape}"
        worst = max(worst, int(steps(out, ref).max()) if out.size else 0)
    return worst


@dataclass
class PteComparison:
    """The .pte on ExecuTorch's runtime + host NeutronBackend vs PyTorch's quantized model and the float model."""

    steps: np.ndarray  # |pte - quantized PyTorch| per output element, in output steps (samples stacked)
    sqnr_db: float  # .pte vs float
    quantized_sqnr_db: float  # PyTorch's quantized model vs float
    agreement_db: float  # .pte vs PyTorch's quantized model

    @property
    def within1(self) -> float:
        return float((self.steps <= 1).mean())


def compare_pte(r: RunResult, model, samples) -> PteComparison:
    """Run the .pte of `r` on the host runtime over `samples` (input tuples) and compare its first output."""
    from executorch_neutron.numerics import sqnr
    from executorch_neutron.runtime import run

    ours, ref, flt = [], [], []
    with torch.no_grad():
        for x in samples:
            ours.append(quantize_np(run(r.result.pte, x)[0].numpy(), r.output_scale, r.output_zero_point))
            ref.append(quantize_np(r.result.quantized_model(*x).numpy(), r.output_scale, r.output_zero_point))
            flt.append(model(*x).numpy())
    ours, ref, flt = np.stack(ours), np.stack(ref), np.stack(flt)
    deq = lambda q: (q.astype(np.float64) - r.output_zero_point) * r.output_scale  # noqa: E731
    return PteComparison(steps(ours, ref), sqnr(flt, deq(ours)), sqnr(flt, deq(ref)), sqnr(deq(ref), deq(ours)))


@dataclass
class ConvertResult:
    """One model converted at the converter level: its edge program's TFLite run in LiteRT, no `lower()`."""

    tflite: bytes
    delegated_ops: dict[str, int]  # compute nodes the partitioner tagged, by edge op name
    rejections: list  # the partitioner's reasons for the nodes it left on the CPU
    outputs: list[np.ndarray]  # int8, PyTorch layout, from LiteRT
    references: list[np.ndarray]  # int8: PyTorch's quantized model, quantized with the model's output parameters
    output_scales: list[float]


class _TagOnly(Partitioner):
    """Wraps a partitioner for `to_edge_transform_and_lower`: the same ops kept from decomposition and the same
    per-node decisions, but no partition is handed to a backend (the edge program comes back whole)."""

    def __init__(self, inner):
        super().__init__(inner.delegation_spec)
        self.inner = inner
        self.tagged: dict[str, str] = {}  # node name -> the tag the wrapped partitioner gave it

    def ops_to_not_decompose(self, ep):
        return self.inner.ops_to_not_decompose(ep)

    def partition(self, ep) -> PartitionResult:
        self.inner.partition(ep)
        for n in ep.graph.nodes:
            tag = n.meta.pop("delegation_tag", None)
            if tag is not None:
                self.tagged[n.name] = tag
        return PartitionResult(tagged_exported_program=ep, partition_tags={})


def _is_q(node) -> bool:
    return node.op == "call_function" and "quantize_per_tensor" in str(node.target) and "dequant" not in str(node.target)


def _is_dq(node) -> bool:
    return node.op == "call_function" and "dequantize_per_" in str(node.target)


def convert_and_run(module, inputs, calib=None, **spec_options) -> ConvertResult:
    """The converter-level path of one small model, without `lower()`'s backend call, payload and .pte:
    PT2E-quantize with the target's quantizer, take the edge program (with the partitioner's decisions, nothing
    delegated), make it the partition program the backend would get (int8 inputs into their dequantize nodes, the
    last quantize nodes as outputs), convert it with convert/ and run the TFLite in LiteRT. The reference is
    PyTorch's quantized model (`convert_pt2e`) on the same inputs, quantized with its own output parameters."""
    inputs = tuple(inputs)
    calib = calib if calib is not None else [inputs] + calibration(inputs, 4)
    pipeline = assemble(resolve_spec(**spec_options))
    quantized = quantize(module.eval(), inputs, calib, pipeline.quantizer)
    tag_only = _TagOnly(pipeline.partitioner)
    edge = to_edge_transform_and_lower(torch.export.export(quantized, inputs, strict=False),
                                       partitioner=[tag_only],
                                       compile_config=pipeline.edge_compile_config)
    program = edge.exported_program()
    graph = program.graph

    compute = [n for n in graph.nodes if n.op == "call_function" and not (_is_q(n) or _is_dq(n))
               and "getitem" not in str(n.target)]
    delegated: dict[str, int] = {}
    for n in compute:
        if n.name in tag_only.tagged:
            name = str(getattr(n.target, "_op", n.target))  # an edge op's ATen overload: aten.convolution.default
            delegated[name] = delegated.get(name, 0) + 1

    # the partition's view: each user input arrives as int8 (its quantize node is the CPU's), each output leaves
    # as int8 (its last dequantize node is the CPU's)
    user_inputs = [n for n in graph.nodes if n.op == "placeholder" and n.name in program.graph_signature.user_inputs]
    in_q = []
    for p in user_inputs:
        (q,) = p.users
        assert _is_q(q), f"input {p.name} is not quantized first: {q.target}"
        in_q.append((float(q.args[1]), int(q.args[2])))
        q.replace_all_uses_with(p)
        graph.erase_node(q)
    out = next(n for n in graph.nodes if n.op == "output")
    outs = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
    out_q = []
    for dq in outs:
        assert _is_dq(dq) and _is_q(dq.args[0]), f"output {dq.name} is not a quantized value"
        out_q.append((float(dq.args[1]), int(dq.args[2])))
    out.args = (tuple(dq.args[0] for dq in outs),)
    graph.eliminate_dead_code()

    converted = convert_program(program, CheckContext.for_program(pipeline.spec, program), "converter_level")
    # the TFLite must carry PyTorch's own quantization parameters at its boundary
    tflite_in_q, tflite_out_q = io_quant(converted.tflite)
    for what, ours, theirs in (("input", tflite_in_q, [in_q[a] for a in converted.input_args]),
                               ("output", tflite_out_q, out_q)):
        for j, ((ts, tz), (s, z)) in enumerate(zip(ours, theirs)):
            assert abs(ts - s) <= 1e-6 * s and tz == z, (
                f"{what} {j}: TFLite quantization ({ts}, {tz}) != PyTorch's quantized model ({s}, {z})")
    xs = [to_physical(quantize_np(inputs[arg].numpy(), *in_q[arg]), fmt)
          for arg, fmt in zip(converted.input_args, converted.input_formats)]
    outputs = [from_physical(o, fmt) for o, fmt in zip(run_tflite(converted.tflite, xs), converted.output_formats)]
    with torch.no_grad():
        ref = quantized(*inputs)
    ref = ref if isinstance(ref, (tuple, list)) else (ref,)
    references = [quantize_np(r.numpy(), *q) for r, q in zip(ref, out_q)]
    return ConvertResult(converted.tflite, delegated, list(pipeline.partitioner.rejections), outputs, references,
                         [q[0] for q in out_q])

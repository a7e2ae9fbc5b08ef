"""Numerical debugging: where does the lowered model drift from PyTorch, and which partition is to blame?

`compare(model, inputs, calibration)` lowers the model (or takes a `LoweringResult`), then on the same input
samples runs the float model, PyTorch's quantized model (`convert_pt2e`, the reference) and the .pte on the host.

Per model output: max error in output quantization steps (.pte vs quantized model), SQNR in dB (.pte vs float;
also quantized vs float for scale) and, for classifiers (2-D outputs), top-1 agreement.
Per partition: the partition's int8 inputs are captured from the quantized model (interpreting its graph and
keeping the quantize nodes whose scale, zero point and shape match the partition's boundary), its TFLite runs
in LiteRT on them, and its int8 outputs are compared with the quantized model's values at the partition outputs
(max steps, SQNR vs quantized). The partition with the largest error is named.
Per delegated op (host-reference partitions): LiteRT keeps every intermediate tensor
(`experimental_preserve_all_tensors`); each op output is matched to the quantized model's quantize node of the same
edge node (by scale, zero point and shape, read back in PyTorch's layout) and compared in its own quantization
steps, in execution order. `drift_start` names the first op more than 1 step off: where drift begins.
Each partition's TFLite also runs requantizing once (LiteRT's XNNPACK kernels; PyTorch's quantized model rounds
once too): when that run is closer to PyTorch than the reference kernels (`PartitionStats.double_rounding`), the
difference is the reference kernels' double rounding of int8 requantization, which the NPU follows, and the
report says so.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np
import torch

from .backends import for_id, host_payload
from .core.exported import lowered_modules
from .core.payload import unpack
from .core.qdq import per_tensor_kind
from .lowering import lower
from .runtime import executor, run
from .tflite.layout import FLATTEN_METADATA, Layout, from_channels_last, physical_shape, unflatten_channels_last
from .tflite.reader import op_name, read_model, tensor_name


@dataclass
class OutputStats:
    index: int
    shape: list[int]
    scale: float | None  # output quantization step (None when the output is not dequantized int8)
    max_steps: float | None  # max |pte - quantized| / scale
    max_abs_error: float  # max |pte - quantized|
    sqnr_db: float | None  # pte vs float
    quantized_sqnr_db: float | None  # quantized PyTorch vs float (what quantization alone costs)
    top1_agreement: float | None = None  # pte vs float, classifiers only
    top1_agreement_quantized: float | None = None  # pte vs quantized PyTorch


@dataclass
class OpStats:
    name: str  # the edge node (TFLite tensor name) whose output this is
    op: str  # TFLite builtin operator
    max_steps: int  # vs the quantized model's value of the same node, in this tensor's quantization steps
    mean_steps: float


@dataclass
class PartitionStats:
    tag: str
    max_steps: int
    mean_steps: float
    sqnr_db: float | None  # partition output vs the quantized model at the same boundary
    note: str = ""
    ops: list[OpStats] = field(default_factory=list)  # per delegated op output matched in the quantized model
    # the same TFLite requantizing once (LiteRT's XNNPACK kernels) vs the quantized model at the same boundary
    once_max_steps: int | None = None
    once_sqnr_db: float | None = None

    @property
    def double_rounding(self) -> bool:
        """Whether the partition's error is the reference kernels' double rounding: the same TFLite requantizing
        once (as PyTorch does) is closer to PyTorch's quantized model than the reference kernels (the NPU's)."""
        return self.once_max_steps is not None and self.once_max_steps < self.max_steps

    @property
    def drift_start(self) -> OpStats | None:
        """The first op (execution order) more than 1 step from PyTorch's quantized model."""
        return next((o for o in self.ops if o.max_steps > 1), None)


@dataclass
class CompareResult:
    samples: int
    outputs: list[OutputStats]
    partitions: list[PartitionStats] = field(default_factory=list)

    @property
    def worst_partition(self) -> PartitionStats | None:
        if not self.partitions:
            return None
        return max(self.partitions, key=lambda p: (p.max_steps, -(p.sqnr_db if p.sqnr_db is not None else 1e9)))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["worst_partition"] = self.worst_partition.tag if self.worst_partition else None
        for p, pd in zip(self.partitions, d["partitions"]):
            pd["drift_start"] = p.drift_start.name if p.drift_start else None
        return d

    def __str__(self) -> str:
        lines = [f"compared on {self.samples} sample(s)"]
        for o in self.outputs:
            parts = [f"output {o.index} {o.shape}:"]
            parts.append(f"max error {o.max_steps:.2f} steps (scale {o.scale:.4g})" if o.max_steps is not None
                         else f"max |error| {o.max_abs_error:.4g}")
            parts.append(f"SQNR vs float {_db(o.sqnr_db)} (quantized PyTorch: {_db(o.quantized_sqnr_db)})")
            if o.top1_agreement is not None:
                parts.append(f"top-1 agreement {100 * o.top1_agreement:.1f}% vs float, "
                             f"{100 * o.top1_agreement_quantized:.1f}% vs quantized")
            lines.append(" ".join(parts[:1]) + " " + "; ".join(parts[1:]))
        for p in self.partitions:
            lines.append(f"partition {p.tag}: max error {_plural(p.max_steps, 'step')}, mean {p.mean_steps:.3f}, "
                         f"SQNR vs quantized {_db(p.sqnr_db)}" + (f" ({p.note})" if p.note else ""))
            if p.double_rounding:
                lines.append(f"  rounding once, as PyTorch does (the same TFLite in LiteRT's XNNPACK kernels): max "
                             f"error {_plural(p.once_max_steps, 'step')}, SQNR vs quantized {_db(p.once_sqnr_db)}; "
                             f"{'the' if p.once_max_steps == 0 else 'the rest of the'} difference is the double "
                             f"rounding of int8 requantization in LiteRT's reference kernels (a rounding doubling "
                             f"high multiply, then a rounding shift), which the NPU follows")
            if p.ops:
                start = p.drift_start
                lines.append(f"  {len(p.ops)} op outputs compared; " + (
                    f"drift starts at {start.name} ({start.op}): {_plural(start.max_steps, 'step')}, then "
                    + ", ".join(f"{o.max_steps}" for o in p.ops[p.ops.index(start) + 1:][:12])
                    if start else f"every op within 1 step (worst {max(o.max_steps for o in p.ops)})"))
        worst = self.worst_partition
        if worst is not None:
            lines.append(f"worst partition: {worst.tag} ({_plural(worst.max_steps, 'step')})")
        return "\n".join(lines)


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" + ("" if n == 1 else "s")


def _db(value: float | None) -> str:
    return "n/a" if value is None else ("inf dB" if math.isinf(value) else f"{value:.1f} dB")


def sqnr(reference: np.ndarray, test: np.ndarray) -> float | None:
    """10*log10(sum(reference^2) / sum((reference - test)^2)) in dB; inf when identical."""
    reference, test = np.asarray(reference, np.float64), np.asarray(test, np.float64)
    noise = float(np.sum((reference - test) ** 2))
    signal = float(np.sum(reference ** 2))
    if noise == 0.0:
        return math.inf
    return None if signal == 0.0 else 10.0 * math.log10(signal / noise)


def _flat(out) -> list[torch.Tensor]:
    leaves, _ = torch.utils._pytree.tree_flatten(out)
    return [t for t in leaves if isinstance(t, torch.Tensor)]


def _tuple(x) -> tuple:
    return (x,) if isinstance(x, torch.Tensor) else tuple(x)


def _arg(gm, value):
    """A literal, or the value of a get_attr node."""
    if isinstance(value, torch.fx.Node) and value.op == "get_attr":
        value = getattr(gm, value.target)
    return value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value


def _output_scales(gm) -> list[float | None]:
    out = next(n for n in gm.graph.nodes if n.op == "output")
    nodes, _ = torch.utils._pytree.tree_flatten(out.args[0])
    scales = []
    for n in nodes:
        ok = per_tensor_kind(n) == "dq"
        scale = _arg(gm, n.args[1]) if ok else None
        scales.append(float(scale) if isinstance(scale, (int, float)) else None)
    return scales


def _output_stats(i, floats, quants, ptes, scale) -> OutputStats:
    f = np.stack([x.numpy() for x in floats]) if floats else None
    q = np.stack([x.numpy() for x in quants])
    p = np.stack([x.numpy() for x in ptes]).astype(np.float64)
    err = float(np.max(np.abs(p - q))) if p.size else 0.0
    stats = OutputStats(i, list(ptes[0].shape), scale, err / scale if scale else None, err,
                        sqnr(f, p) if f is not None else None, sqnr(f, q) if f is not None else None)
    if p.ndim == 3 and p.shape[-1] > 1:  # (samples, batch, classes): a classifier
        top = p.argmax(-1)
        stats.top1_agreement_quantized = float(np.mean(top == q.argmax(-1)))
        stats.top1_agreement = float(np.mean(top == f.argmax(-1))) if f is not None else None
    return stats


def compare(
    model: torch.nn.Module | None = None,
    inputs=None,
    calibration: Iterable | None = None,
    target: str | None = None,
    *,
    result=None,
    samples: Sequence | None = None,
    max_samples: int = 8,
    progress=None,
    **lower_options,
) -> CompareResult:
    """Compare the float model, PyTorch's quantized model and the .pte (host run) on the same inputs.

    model, inputs, calibration, target, lower_options: as for `lower()` (skipped when `result` is given).
    result: an existing LoweringResult (its quantized_model is the reference; `model` is then the float model,
        optional).
    samples: input tuples to evaluate on; default: up to `max_samples` calibration samples, else the inputs.
    """

    if result is None:
        if model is None or inputs is None:
            raise ValueError("compare() needs a model and example inputs, or result=LoweringResult")

        calibration = list(calibration) if calibration is not None else None
        result = lower(model, inputs, calibration, target, progress=progress, **lower_options)
    quantized = result.quantized_model
    if quantized is None:
        raise ValueError("the LoweringResult has no quantized_model (quantize_model=False): nothing to compare with; "
                         "lower the float model, or compare your QAT model before converting")
    if samples is None:
        samples = list(calibration)[:max_samples] if calibration else [_tuple(inputs)]
    samples = [_tuple(s) for s in samples]
    float_model = model if model is not None and model is not quantized and lower_options.get(
        "quantize_model", True) else None
    if isinstance(float_model, torch.nn.Module) and float_model.training:  # as lower() sees it, caller's untouched

        float_model = copy.deepcopy(float_model).eval()

    floats, quants, ptes = [], [], []
    with torch.no_grad():
        for x in samples:
            if float_model is not None:
                floats.append(_flat(float_model(*x)))
            quants.append(_flat(quantized(*x)))
            ptes.append(run(result.pte, list(x)))  # in a child process: a crash there is one line (HostRunCrashed)
    scales = _output_scales(quantized)
    outputs = []
    for i in range(len(quants[0])):
        outputs.append(_output_stats(i, [f[i] for f in floats], [q[i] for q in quants], [p[i] for p in ptes],
                                     scales[i] if i < len(scales) else None))
    return CompareResult(len(samples), outputs, partition_stats(result, samples))


# --- per partition -----------------------------------------------------------------------------------------

def _qkey(gm, node, value=None) -> tuple | None:
    """(scale, zero point, shape) of a per-tensor quantize/dequantize node, used to match boundaries."""
    kind = per_tensor_kind(node)
    if kind is None:
        return None
    scale, zp = _arg(gm, node.args[1]), _arg(gm, node.args[2])
    src = node if kind == "q" else node.args[0]
    val = value if value is not None else src.meta.get("val") if isinstance(src, torch.fx.Node) else None
    if not isinstance(scale, (int, float)) or val is None:
        return None
    return (round(float(scale), 9), int(zp), tuple(val.shape))


def _boundaries(original) -> tuple[list[tuple | None], list[tuple | None]]:
    """Keys of a partition's inputs (via the dequantize node each feeds) and outputs (their quantize nodes)."""
    sig = original.graph_signature
    graph = original.graph
    ins = []
    for n in graph.nodes:
        if n.op == "placeholder" and n.name in sig.user_inputs:
            ins.append(next((k for u in n.users if (k := _qkey(original.graph_module, u))), None))
    out = next(n for n in graph.nodes if n.op == "output").args[0]
    return ins, [_qkey(original.graph_module, n) for n in out]


class _Capture(torch.fx.Interpreter):
    """Interprets the quantized model, keeping the int8 results of its quantize nodes by boundary key."""

    def __init__(self, gm, keys: set):
        super().__init__(gm)
        self.keys, self.seen = keys, {}

    def run_node(self, n):
        result = super().run_node(n)
        key = _qkey(self.module, n, result) if per_tensor_kind(n) == "q" else None
        if key in self.keys:
            self.seen.setdefault(key, []).append(result.detach().clone())
        return result


def partition_stats(result, samples: list[tuple]) -> list[PartitionStats]:
    """Run every host-reference partition in LiteRT on the quantized model's values at its inputs."""
    gm = result.edge_program.exported_program().graph_module
    lowered = list(lowered_modules(gm).values())
    bounds = [_boundaries(m.original_module) for m in lowered]
    op_keys = [_op_keys(m.original_module) for m in lowered]
    keys = {k for ins, outs in bounds for k in ins + outs if k is not None}
    keys |= {k for names in op_keys for k in names.values()}
    captured = []
    with torch.no_grad():
        for x in samples:
            cap = _Capture(result.quantized_model, keys)
            cap.run(*x)
            captured.append(cap.seen)
    stats = []
    for (ins, outs), module, tag in zip(bounds, lowered, result.report.partitions):
        blob = host_payload(module)
        if blob is None:  # a device-only payload: its back end says why and what to do
            stats.append(PartitionStats(tag.tag, 0, 0.0, None, for_id(module.backend_id).device_only))
            continue
        payload = unpack(blob)
        if any(k is None or k not in captured[0] for k in ins + outs):
            stats.append(PartitionStats(tag.tag, 0, 0.0, None, "boundary not found in the quantized model"))
            continue
        ambiguous = any(len(captured[0][k]) > 1 for k in ins + outs)
        h = payload.header
        model = read_model(payload.tflite)
        diffs, refs, tests, per_op = [], [], [], {}
        once_diffs, once_tests = [], []
        for seen in captured:  # one run per sample: its outputs and (kept intermediates) every op's output
            args = [seen[ins[k]][0].numpy() for k in h.input_args]
            outputs, interpreter = executor.run_reference_payload(blob, args, keep_intermediates=True)
            _op_diffs(model, interpreter, op_keys[len(stats)], seen, per_op)
            once = _rounding_once(blob, args)
            for j, out in enumerate(outputs):
                got = out.astype(np.int32)
                want = seen[outs[h.output_args[j]]][0].numpy().astype(np.int32)
                zp = outs[h.output_args[j]][1]
                diffs.append(np.abs(got - want).ravel())
                refs.append((want - zp).ravel())
                tests.append((got - zp).ravel())
                if once is not None:
                    once_diffs.append(np.abs(once[j].astype(np.int32) - want).ravel())
                    once_tests.append((once[j].astype(np.int32) - zp).ravel())
        d = np.concatenate(diffs)
        note = "a boundary matched several quantize nodes; the first was used" if ambiguous else ""
        ops = _op_rows(model, per_op)
        p = PartitionStats(tag.tag, int(d.max()) if d.size else 0, float(d.mean()) if d.size else 0.0,
                           sqnr(np.concatenate(refs), np.concatenate(tests)), note, ops)
        if once_diffs and len(once_diffs) == len(diffs):
            od = np.concatenate(once_diffs)
            p.once_max_steps = int(od.max()) if od.size else 0
            p.once_sqnr_db = sqnr(np.concatenate(refs), np.concatenate(once_tests))
        stats.append(p)
    return stats


def _rounding_once(blob: bytes, args: list[np.ndarray]) -> list[np.ndarray] | None:
    """The partition's TFLite run with one rounding per requantization (LiteRT's XNNPACK kernels), or None when
    LiteRT cannot run it so (an int16 or custom op no kernel of it takes)."""
    try:
        return executor.run_reference_payload(blob, args, rounding_once=True)
    except Exception:  # noqa: BLE001 - a figure left out, never a failed comparison
        return None


def _op_keys(original) -> dict[str, tuple]:
    """Edge node name (= the TFLite tensor name of its output) -> key of the quantize node that follows it."""
    keys = {}
    for n in original.graph.nodes:
        if per_tensor_kind(n) == "q" and isinstance(n.args[0], torch.fx.Node):
            key = _qkey(original.graph_module, n)
            if key is not None:
                keys.setdefault(n.args[0].name, key)
    return keys


def _logical(value: np.ndarray, shape: tuple, kind: str) -> np.ndarray | None:
    """An op output read from LiteRT in PyTorch's order: rank-4 values live channels-last inside a partition,
    except the result of a RESHAPE (a view is defined on PyTorch's order); None when the shape does not fit."""

    if value.ndim == 4 and kind != "RESHAPE":
        if value.shape == physical_shape(shape, Layout.CHANNELS_LAST):
            return from_channels_last(value)
    return value if value.shape == tuple(shape) else None


def _flattens(model) -> dict[str, tuple[int, ...]]:
    """The tensors the converter wrote as a channels-last flatten (its FLATTEN_METADATA): name -> rank-4 shape."""
    for entry in model.metadata or []:
        name = entry.name.decode() if isinstance(entry.name, bytes) else entry.name
        if name == FLATTEN_METADATA:
            return {k: tuple(v) for k, v in json.loads(bytes(model.buffers[entry.buffer].data)).items()}
    return {}


def _op_diffs(model, interpreter, op_keys: dict, seen: dict, per_op: dict[int, list[np.ndarray]]) -> None:
    """Add one sample's |LiteRT - quantized model| of every op output of the partition's TFLite to `per_op`."""
    graph = model.subgraphs[0]
    flattens = _flattens(model)
    for k, op in enumerate(graph.operators):
        t = op.outputs[0]
        name = tensor_name(graph, t)
        key = op_keys.get(name)
        if key is None or len(seen.get(key, ())) != 1:
            continue  # no quantize node of its own (an inserted transpose, pad...) or ambiguous
        want = seen[key][0].numpy()
        value = interpreter.get_tensor(t)
        if name in flattens:
            value = unflatten_channels_last(value, flattens[name])
        got = _logical(value, want.shape, op_name(model, op))
        if got is not None:
            per_op.setdefault(k, []).append(np.abs(got.astype(np.int32) - want.astype(np.int32)).ravel())


def _op_rows(model, per_op: dict[int, list[np.ndarray]]) -> list[OpStats]:
    graph = model.subgraphs[0]
    out = []
    for k, diffs in sorted(per_op.items()):
        op = graph.operators[k]
        d = np.concatenate(diffs)
        out.append(OpStats(tensor_name(graph, op.outputs[0]), op_name(model, op), int(d.max()), float(d.mean())))
    return out


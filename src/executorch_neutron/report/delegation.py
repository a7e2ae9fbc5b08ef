"""The delegation report of one lowering: what runs on the NPU, what stays on the CPU and why, and what it costs.

Built by `DelegationReport.build` from the quantized ExportedProgram (MACs of the whole model), the lowered edge
program (one lowered module per partition: nodes, ops, io, constants, payload) and the partitioner's decisions
(every CPU node with its reason). Rendered as text (`str(report)`), Markdown, HTML or JSON (see render.py and
schema.json); `report.save("r.html")` picks the format from the suffix.
"""

from __future__ import annotations

import json
import math
import operator
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .. import backends
from ..compile_spec import DEFAULT_PROFILE, NeutronCompileSpec
from ..core import qdq
from ..core.atomic import write_text
from ..core.cpu_constants import FOLDED_META
from ..core.exported import constants, lowered_modules, partition_tag
from ..core.payload import unpack
from ..core.qdq import per_tensor_kind
from ..ops.registry import KEPT_INT8_META, op_name
from ..partition.support import Rejection
from ..pte import io_qparams
from ..quantizer.precision import KEPT_FLOAT_REASON
from ..target import get_target
from ..tflite.layout import stored_channels_last
from . import macs as _macs
from .graph import apply_costs, program_graph
from .html import to_html
from .memory import MemorySection
from .render import to_dict, to_markdown, to_text


@dataclass
class PartitionReport:
    tag: str
    nodes: list[str]
    ops: Counter
    blob: bytes
    kind: str
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)
    output_shapes: list[tuple[int, ...]] = field(default_factory=list)
    input_formats: tuple[int, ...] = ()
    output_formats: tuple[int, ...] = ()
    macs: int = 0
    op_macs: Counter = field(default_factory=Counter)
    weight_bytes: int = 0  # constants the partition computes with (int8 weights, int32 biases), not qparams
    largest_activation_bytes: int = 0  # largest single int8 tensor inside or at the boundary of the partition
    working_set_bytes: int = 0  # largest input+output activation bytes of one operator
    #: its back end's estimate (`Backend.partition_estimate`): {"by", "cycles", "inference_seconds", "layers", ...}
    estimate: dict | None = None
    backend: dict = field(default_factory=dict)  # its back end's own section (`Backend.section`), e.g. compiler flags
    compiled_by: str = ""  # what compiled the payload when a device compiler did (its tool and version)
    reference: bytes | None = None  # what the host runs for it (its back end's host-reference payload), if any

    @property
    def tflite(self) -> bytes:
        """The partition's int8 TFLite as the host runs it (its back end's host-reference payload)."""
        if self.reference is None:
            raise ValueError(f"{self.tag}: its payload carries no TFLite the host runs (a device-only payload)")
        return unpack(self.reference).tflite

    @property
    def payload_bytes(self) -> int:
        return len(self.blob)


@dataclass
class CpuNode:
    """A node left on the CPU: the partitioner's rejection plus its MACs."""

    rejection: Rejection
    macs: int = 0

    @property
    def op(self) -> str:
        return self.rejection.op


@dataclass(frozen=True)
class Requantization:
    """A dequantize -> quantize pair left on the CPU: the quantized model changes an int8 tensor's parameters
    there (e.g. a fixed-parameter softmax/tanh output feeding an op with shared parameters). The operator
    registry has no requantize operator, so each one sits between two partitions (or at a model boundary)."""

    node: str  # the quantize node
    source: str  # what it requantizes (a delegate output, a model input, ...)
    from_scale: float
    from_zero_point: int
    to_scale: float
    to_zero_point: int

    def describe(self) -> str:
        return (f"{self.node}: {self.source} from scale {self.from_scale:.6g} zero point {self.from_zero_point} "
                f"to scale {self.to_scale:.6g} zero point {self.to_zero_point}")


@dataclass
class DelegationReport:
    target: str
    partitions: list[PartitionReport]
    rejections: list[Rejection]
    total_macs: int = 0  # of every node, on the NPU or not (from the quantized ExportedProgram)
    cpu_macs: dict[str, int] = field(default_factory=dict)  # rejected node name -> MACs
    cpu_constant_bytes: int = 0  # constants left in the program outside delegates
    pte_bytes: int | None = None  # size of the .pte file (lower() sets it)
    requantizations: list[Requantization] = field(default_factory=list)  # CPU dequantize -> quantize pairs
    constraints: str = DEFAULT_PROFILE  # the constraint profile the partitioner followed
    # targets with a Cortex-M core (imxrt700cm): the core, and per CPU node the int8 kernel it became
    cortex_m_core: str | None = None
    cortex_m_kernels: dict[str, str] = field(default_factory=dict)  # CPU node -> "cortex_m.softmax", ...
    cortex_m_refused: dict[str, str] = field(default_factory=dict)  # CPU node -> why the Cortex-M passes refused it
    graph: object = None  # graph.ProgramGraph: the lowered program as vertices and edges (the HTML draws it)
    memory: MemorySection | None = None  # what the .pte needs on the target (memory.py; lower() sets it)
    cpu_work: list = field(default_factory=list)  # (op, output elements, MACs) per CPU node (the estimate's CPU part)
    quantized_io: list = field(default_factory=list)  # pte.IOQParams of forward's inputs and outputs (quantized I/O)
    #: node -> its precision where it is not the int8 default: INT16_NOTE, or the quantizer's note ("kept int8: <why>"
    #: for an op set to int16 without int16 support)
    precision_notes: dict[str, str] = field(default_factory=dict)
    #: CPU nodes that computed on constants only, folded into constants at lowering (core/cpu_constants.py)
    folded: list[str] = field(default_factory=list)

    # --- the estimate: one, from the target's back end ---------------------------------------------------
    @property
    def backend(self):
        """The target's back end (its row of backends.BACKENDS)."""
        return backends.BACKENDS[get_target(self.target).kind]

    @property
    def estimate(self) -> dict | None:
        """The back end's estimate of the whole .pte (`Backend.estimate_total` of the partitions' estimates and the
        CPU nodes): {"by": who estimates, "cycles", "inference_seconds", "core_clock_hz", "macs", ...}."""
        estimates = [p.estimate for p in self.partitions if p.estimate]
        if not estimates or self.backend.estimate_total is None:
            return None
        return self.backend.estimate_total(estimates, self.cpu_work, get_target(self.target))

    @property
    def estimate_notes(self) -> list[str]:
        """What the estimate is and which figures it used, as its back end says (`Backend.estimate_notes`)."""
        total = self.estimate
        if total is None or self.backend.estimate_notes is None:
            return []
        return self.backend.estimate_notes(get_target(self.target), total)

    # --- counts -------------------------------------------------------------------------------------------
    @property
    def delegated_ops(self) -> Counter:
        total = Counter()
        for p in self.partitions:
            total.update(p.ops)
        return total

    @property
    def cpu_ops(self) -> Counter:
        return Counter(r.op for r in self.rejections)

    @property
    def float_rejections(self) -> list[Rejection]:
        """CPU nodes that compute in float (portable kernels): all of them unless a Cortex-M core took some."""
        return [r for r in self.rejections if r.node not in self.cortex_m_kernels]

    @property
    def cortex_m_rejections(self) -> list[Rejection]:
        """CPU nodes that run as int8 kernels of the Cortex-M core (`cortex_m_kernels` says which)."""
        return [r for r in self.rejections if r.node in self.cortex_m_kernels]

    def float_reason(self, r: Rejection) -> str:
        """Why a CPU node computes in float: the NPU's reason, and on a Cortex-M target why that core did not."""
        if self.cortex_m_core is None or r.reason == KEPT_FLOAT_REASON:  # the configuration kept it off both
            return r.reason
        if r.node in self.cortex_m_refused:
            return (f"{r.reason}; not an int8 {self.cortex_m_core} kernel either: ExecuTorch's Cortex-M passes "
                    f"refused it ({self.cortex_m_refused[r.node]})")
        return (f"{r.reason}; no int8 {self.cortex_m_core} kernel: ExecuTorch's Cortex-M backend does not "
                f"quantize or lower {r.op} (see executorch.backends.cortex_m.quantizer.quantizer_support)")

    @property
    def num_delegated(self) -> int:
        return sum(len(p.nodes) for p in self.partitions)

    @property
    def num_compute(self) -> int:
        return self.num_delegated + len(self.rejections)

    @property
    def node_share(self) -> float:
        return self.num_delegated / self.num_compute if self.num_compute else 0.0

    @property
    def npu_macs(self) -> int:
        return sum(p.macs for p in self.partitions)

    @property
    def mac_share(self) -> float:
        total = max(self.total_macs, self.npu_macs)
        return self.npu_macs / total if total else 0.0

    @property
    def payload_bytes(self) -> int:
        return sum(p.payload_bytes for p in self.partitions)

    @property
    def model_bytes(self) -> int:
        """The .pte size when known, else delegate payloads + CPU-side constants."""
        return self.pte_bytes if self.pte_bytes is not None else self.payload_bytes + self.cpu_constant_bytes

    @property
    def cpu_groups(self) -> dict[str, list[CpuNode]]:
        """Float CPU nodes grouped by operator, most frequent first."""
        return self._groups(self.float_rejections)

    @property
    def cortex_m_groups(self) -> dict[str, list[CpuNode]]:
        """CPU nodes run as Cortex-M int8 kernels, grouped by operator, most frequent first."""
        return self._groups(self.cortex_m_rejections)

    def _groups(self, rejections) -> dict[str, list[CpuNode]]:
        groups: dict[str, list[CpuNode]] = {}
        for r in rejections:
            groups.setdefault(r.op, []).append(CpuNode(r, self.cpu_macs.get(r.node, 0)))
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    # --- rendering ----------------------------------------------------------------------------------------
    @property
    def npu(self) -> str:
        """How the report's target's back end names its NPU (target.KIND_NAMES)."""
        return self.backend.npu

    @property
    def limits(self) -> str:
        """What limited the partitioning, as the back end says (`Backend.limits` of the constraint profile)."""
        return self.backend.limits(self.constraints) if self.backend.limits else f"constraints {self.constraints}"

    def summary_line(self) -> str:
        n, total = self.num_delegated, self.num_compute
        head = (f"{n} of {total} compute nodes ({100.0 * self.node_share:.1f}%) on the {self.backend.headline} in "
                f"{len(self.partitions)} partition(s); ")
        if self.cortex_m_core is None:
            return head + f"{len(self.rejections)} on the CPU"
        return head + (f"{len(self.cortex_m_rejections)} as int8 {self.cortex_m_core} kernels; "
                       f"{len(self.float_rejections)} float on the CPU")

    def __str__(self) -> str:
        return to_text(self)

    def to_dict(self) -> dict:
        return to_dict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_markdown(self) -> str:
        return to_markdown(self)

    def to_html(self, sections=()) -> str:
        """The HTML page; `sections`: fragments shown after its cards (the accuracy section of `evaluate`)."""
        return to_html(self, sections)

    def save(self, path: str | Path) -> Path:
        """Write the report; the format follows the suffix: .md, .html/.htm, .json, anything else text."""
        path = Path(path)
        suffix = path.suffix.lower()
        text = {".md": self.to_markdown, ".html": self.to_html, ".htm": self.to_html,
                ".json": self.to_json}.get(suffix, self.__str__)()

        return write_text(path, text + ("" if text.endswith("\n") else "\n"))

    # --- construction -------------------------------------------------------------------------------------
    @classmethod
    def build(cls, exported, edge, partitioner, spec: NeutronCompileSpec, leftovers=None) -> "DelegationReport":
        """`leftovers`: the Cortex-M stage's `Leftovers` (cortex_m/stage.py) on a target with a Cortex-M core."""
        program = edge.exported_program()
        gm = program.graph_module
        partitions = []
        target = spec.target_info
        for lowered in lowered_modules(gm).values():
            tag = partition_tag(lowered.original_module)
            partitions.append(_partition(tag, lowered, partitioner.partition_tags.get(tag, []), target))
        by_name = {n.name: n for n in gm.graph.nodes}
        folded = list(gm.meta.get(FOLDED_META, ()))  # computed once at lowering: no longer run on the CPU
        rejections = [r for r in partitioner.rejections if r.node not in folded]
        cpu_macs = {r.node: _macs.node_macs(by_name[r.node]) for r in rejections if r.node in by_name}
        npu = sum(p.macs for p in partitions)
        total = _macs.graph_macs(exported.graph) if exported is not None else 0
        kernels = {} if leftovers is None else {
            r.node: k for r in rejections if (k := leftovers.kernel_of(r.node)) is not None}
        graph = program_graph(program, rejections, kernels, {p.tag: p.input_formats for p in partitions})
        return cls(spec.target, partitions, rejections,
                   total_macs=max(total, npu + sum(cpu_macs.values())), cpu_macs=cpu_macs,
                   cpu_constant_bytes=_constant_bytes(program), requantizations=_requantizations(gm),
                   constraints=spec.constraints,
                   cortex_m_core=None if leftovers is None else leftovers.core, cortex_m_kernels=kernels,
                   cortex_m_refused={} if leftovers is None else dict(leftovers.refused),
                   graph=apply_costs(graph, partitions), cpu_work=_macs.cpu_work(gm.graph),
                   quantized_io=io_qparams(getattr(edge, "_config_methods", None) or {}).get("forward", []),
                   precision_notes=_precision_notes(gm), folded=folded)


INT16_NOTE = "int16 activations, int8 weights (A16W8, by the precision config)"


def _precision_notes(gm) -> dict[str, str]:
    """Per node, what its precision is when it is not the int8 default: the quantizer's notes
    (`registry.KEPT_INT8_META`: an op set to int16 that stays int8) and every node whose output is quantized to int16
    (INT16_NOTE), in the CPU graph and in every partition."""
    import torch

    graphs = [gm.graph] + [lowered.original_module.graph for lowered in lowered_modules(gm).values()]
    notes = {}
    for g in graphs:
        for n in g.nodes:
            if note := (n.meta.get("custom") or {}).get(KEPT_INT8_META):
                notes[n.name] = note
            elif n.op == "call_function" and op_name(n.target).startswith("aten.") and any(
                    per_tensor_kind(u) == "q" and torch.int16 in (*u.args, *u.kwargs.values()) for u in n.users):
                notes[n.name] = INT16_NOTE
    return notes


def _requantizations(gm) -> list[Requantization]:
    """Per-tensor dequantize -> quantize pairs with different parameters left in the top-level (CPU) graph."""
    out = []
    for q in gm.graph.nodes:
        dq = q.args[0] if per_tensor_kind(q) == "q" else None
        if per_tensor_kind(dq) != "dq":
            continue
        (fs, fz), (ts, tz) = dq.args[1:3], q.args[1:3]
        if not all(isinstance(v, (int, float)) for v in (fs, fz, ts, tz)) or (fs, fz) == (ts, tz):
            continue
        source = dq.args[0]
        if source.op == "call_function" and source.target is operator.getitem:  # an output of a delegate call
            source_name = f"output {source.args[1]} of {_delegate_tag(gm, source.args[0])}"
        else:
            source_name = source.name
        out.append(Requantization(q.name, source_name, float(fs), int(fz), float(ts), int(tz)))
    return out


def _delegate_tag(gm, call) -> str:
    lowered = lowered_modules(gm).get(call)
    return call.name if lowered is None else partition_tag(lowered.original_module)


def _constant_bytes(program) -> int:
    return sum(t.numel() * t.element_size() for t in constants(program).values())


def _is_qparam(node) -> bool:
    """A constant used only as the scale / zero point of quantize or dequantize nodes."""
    return bool(node.users) and all(
        (qdq.is_q(u) or qdq.is_dq(u)) and u.args and u.args[0] is not node for u in node.users)


def _partition(tag: str, lowered, compute_names: list[str], target) -> PartitionReport:
    original = lowered.original_module
    graph = original.graph
    names = set(compute_names)
    compute = [n for n in graph.nodes if n.name in names]
    consts = constants(original)
    placeholders = [n for n in graph.nodes if n.op == "placeholder" and n.name in original.graph_signature.user_inputs]
    outputs = next(n for n in graph.nodes if n.op == "output").args[0]
    backend = backends.for_id(lowered.backend_id)
    view = backends.view(lowered)  # its back end's reading: kind, format flags (None: as the TFLite has it), meta
    info = dict(getattr(lowered, "meta", {}).get("_delegate_info_meta") or {})
    estimate = None
    if backend.partition_estimate is not None:  # the TFLite the compile step was given (metadata, else reference's)
        tflite = info.get("tflite") or (view["tflite"]() if view["tflite"] else None)
        estimate = backend.partition_estimate(tflite, info, target)

    def int8_bytes(node) -> int:  # activations inside the partition are int8: one byte per element
        dims = _macs.shape(node)
        return 0 if dims is None else math.prod(dims)

    def is_const(node) -> bool:
        src = node.args[0] if qdq.is_dq(node) and node.args else node
        return getattr(src, "name", None) in consts

    working = 0
    for n in compute:
        ins = sum(int8_bytes(a) for a in n.all_input_nodes if not is_const(a))
        working = max(working, ins + int8_bytes(n))
    acts = [int8_bytes(n) for n in compute] + [int8_bytes(n) for n in placeholders]
    by_name = {n.name: n for n in graph.nodes}
    weights = sum(t.numel() * t.element_size() for name, t in consts.items()
                  if name in by_name and not _is_qparam(by_name[name]))
    op_macs = Counter()
    for n in compute:
        op_macs[op_name(n.target)] += _macs.node_macs(n)
    return PartitionReport(
        tag=tag,
        nodes=[n.name for n in compute],
        ops=Counter(op_name(n.target) for n in compute),
        blob=bytes(lowered.processed_bytes),
        kind=view["kind"],
        input_shapes=[tuple(n.meta["val"].shape) for n in placeholders],
        output_shapes=[tuple(n.meta["val"].shape) for n in outputs],
        # no flags in the payload: the TFLite takes and gives the tensors as ExecuTorch stores them
        input_formats=view["input_formats"] or tuple(int(stored_channels_last(n)) for n in placeholders),
        output_formats=view["output_formats"] or tuple(int(stored_channels_last(n)) for n in outputs),
        macs=sum(op_macs.values()),
        op_macs=+op_macs,
        weight_bytes=weights,
        largest_activation_bytes=max(acts, default=0),
        working_set_bytes=working,
        estimate=estimate,
        backend=backend.section(info) if backend.section else {},
        compiled_by=info.get("compiled_by") or "",
        reference=backend.reference(lowered),
    )



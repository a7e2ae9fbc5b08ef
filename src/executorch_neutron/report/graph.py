"""The lowered program as a graph of what runs where: the data the HTML report draws (report/graph_svg.py).

`program_graph(graph_module, rejections)` reads the lowered edge program: the top-level graph (model inputs and
outputs, the nodes left on the CPU, one delegate call per partition) and each partition's own graph (its compute
nodes). Quantize / dequantize nodes are not vertices: they are what an edge pays where a tensor crosses a
partition boundary (`Edge.conversions`), together with a layout transpose when the partition's format flag asks
the runtime for one. Every delegate input and output is one boundary tensor (`Edge.ports`, e.g. "<tag>:in:0"),
so the crossings a reader sees are exactly the partition boundary tensors of the lowered program.

Per-node cost: a partition's per-layer estimate (`layer_costs`: its back end's estimate,
`PartitionReport.estimate`) is mapped from each layer's TFLite output tensor,
named after the edge node that computes it, back to that node.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field

from ..core.exported import lowered_modules, op_base_name, op_name, partition_tag
from ..ops.fusion import fused_activation
from . import macs as _macs

CPU = "cpu"
_QDQ = {"quantize_per_tensor": "quantize", "quantize_per_channel": "quantize",
        "dequantize_per_tensor": "dequantize", "dequantize_per_channel": "dequantize"}
_PLUMBING = {"alloc"}  # memory planning nodes to_executorch adds: no computation, no vertex


@dataclass
class Vertex:
    id: str
    op: str  # "aten.convolution.default"; "input" / "output" for the model's own
    place: str  # a partition tag, CPU, or "io" for a model input / output
    shape: tuple[int, ...] | None = None
    reason: str | None = None  # CPU nodes: why the NPU did not take it
    hint: str | None = None
    kernel: str | None = None  # CPU nodes run as an int8 Cortex-M kernel ("cortex_m.softmax")
    macs: int = 0
    cost: float | None = None  # the partition's per-layer estimate for this node (unit: Graph.cost_unit)
    layers: list[str] = field(default_factory=list)  # the estimate's layers ending at this node ("Conv2D", ...)
    fused_into: str | None = None  # an activation the NPU computes inside its producer's layer: that producer

    @property
    def label(self) -> str:
        if self.place == "io":
            return self.id
        parts = self.op.split(".")
        return parts[1] if len(parts) >= 3 and parts[0] in ("aten", "dim_order_ops") else self.op


@dataclass
class Edge:
    src: str  # vertex id
    dst: str
    shape: tuple[int, ...] | None = None
    ports: tuple[str, ...] = ()  # boundary tensors this edge carries: "<tag>:out:<k>" and/or "<tag>:in:<k>"
    conversions: tuple[str, ...] = ()  # "dequantize", "quantize", "transpose" on the way

    @property
    def crossing(self) -> bool:
        return bool(self.ports)


@dataclass
class Partition:
    tag: str
    nodes: list[str]
    inputs: int
    outputs: int
    macs: int = 0
    unattributed_cost: float = 0  # estimated layers that end at no model node (e.g. layout transposes)


@dataclass
class ProgramGraph:
    vertices: dict[str, Vertex]
    edges: list[Edge]
    partitions: list[Partition]
    cost_unit: str | None = None  # "cycles (<who estimates>)"
    boundary_tensors: set[str] = field(default_factory=set)  # every "<tag>:in:<k>" / "<tag>:out:<k>"
    # (partition tag, TFLite tensor name: a compute node's or its quantize node's) -> vertex id
    aliases: dict[tuple[str, str], str] = field(default_factory=dict)


def _shape(node) -> tuple[int, ...] | None:
    """A node's tensor shape; for a multi-output op (native_group_norm, ...), its first output's."""
    val = node.meta.get("val")
    return _macs.shape(val[0] if isinstance(val, (tuple, list)) and val else node)


def _kind(node) -> str | None:
    if node.op != "call_function":
        return None
    if node.target is operator.getitem:
        return "getitem"
    name = op_base_name(node.target)
    return _QDQ.get(name, "plumbing" if name in _PLUMBING else None)


def _inputs(node) -> list:
    """The tensor arguments of a node, not the buffers an out-variant writes (`out=`, or `values=` and `indices=`
    of `sort.values`: the schema's written arguments, which to_executorch fills with `alloc` nodes)."""
    from torch.fx import Node

    schema = getattr(node.target, "_schema", None)
    written = {a.name for a in schema.arguments if a.is_out} if schema is not None else set()
    found = []

    def walk(a):
        if isinstance(a, Node):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            for b in a:
                walk(b)

    walk(node.args)
    for k, v in node.kwargs.items():
        if k not in written and not k.startswith("out"):
            walk(v)
    return found


def program_graph(program, rejections=(), cortex_m_kernels=None, format_flags=None) -> ProgramGraph:
    """The graph of a lowered edge `program` (an ExportedProgram; see the module docstring).

    `rejections`: the partitioner's (reason and hint per CPU node); `cortex_m_kernels`: CPU node -> int8 kernel;
    `format_flags`: partition tag -> per-input flags (1: the runtime transposes NCHW -> NHWC on the CPU)."""
    reasons = {r.node: r for r in rejections}
    kernels = cortex_m_kernels or {}
    flags = format_flags or {}
    graph_module = program.graph_module
    delegates = lowered_modules(graph_module)
    vertices: dict[str, Vertex] = {}
    edges: list[Edge] = []
    partitions: list[Partition] = []
    boundary: set[str] = set()
    user_inputs = set(program.graph_signature.user_inputs)
    aliases: dict[tuple[str, str], str] = {}  # (tag, a compute node or its quantize node) -> the vertex
    top: dict = {}  # top-level node -> its vertex id (model inputs, CPU nodes)

    def vertex_id(name: str, tag: str) -> str:
        """A node's name, or `<tag>/<name>` where another graph already has that name: each partition's graph and
        the top-level graph name their nodes apart, and to_executorch names new top-level nodes afresh."""
        return name if name not in vertices else f"{tag}/{name}"

    # the partitions' own graphs: compute vertices, internal edges, and what each output port is computed by
    inner: dict = {}  # delegate call node -> (tag, its user input placeholders, its output nodes)
    for call, lowered in delegates.items():
        part = lowered.original_module
        tag = partition_tag(part)
        graph = part.graph
        sig_inputs = set(part.graph_signature.user_inputs)
        placeholders = [n for n in graph.nodes if n.op == "placeholder" and n.name in sig_inputs]
        outputs = list(next(n for n in graph.nodes if n.op == "output").args[0])
        compute = [n for n in graph.nodes if n.op == "call_function" and _kind(n) is None]
        ids = {}
        for n in compute:
            ids[n] = vertex_id(n.name, tag)
            vertices[ids[n]] = Vertex(ids[n], op_name(n.target), tag, _shape(n), macs=_macs.node_macs(n))
            aliases[(tag, n.name)] = ids[n]
        aliases.update({(tag, q.name): ids[q.args[0]] for q in graph.nodes
                        if _kind(q) == "quantize" and q.args[0] in ids})
        for n in compute:  # a conv / linear / add with the relu it absorbs: one TFLite operator
            act = fused_activation(n)
            if act is not None and act in ids:
                vertices[ids[act]].fused_into = ids[n]
        partitions.append(Partition(tag, list(ids.values()), len(placeholders), len(outputs),
                                    sum(vertices[v].macs for v in ids.values())))
        boundary.update(f"{tag}:in:{k}" for k in range(len(placeholders)))
        boundary.update(f"{tag}:out:{k}" for k in range(len(outputs)))
        inner[call] = (tag, placeholders, outputs, ids)

    def inside(node, placeholders, ids):
        """Trace a partition-internal value back through quantize / dequantize to a compute node (its vertex id)
        or to a user input placeholder (its index); None for a constant."""
        while _kind(node) in ("quantize", "dequantize", "getitem"):  # getitem: of max_pool2d_with_indices, ...
            node = node.args[0]
        if node.op == "placeholder":
            return ("in", placeholders.index(node)) if node in placeholders else None
        return ("node", ids[node]) if node in ids else None

    def outside(node):
        """Trace a top-level value back to (vertex id, output port or None, conversions on the way)."""
        conversions = []
        while True:
            kind = _kind(node)
            if kind in ("quantize", "dequantize"):
                conversions.append(kind)
                node = node.args[0]
            elif kind == "getitem" and node.args[0] in inner:
                tag, placeholders, outputs, ids = inner[node.args[0]]
                k = node.args[1]
                found = inside(outputs[k], placeholders, ids)
                if found is None or found[0] == "in":  # an input handed straight through: no vertex inside
                    return None
                return found[1], f"{tag}:out:{k}", tuple(reversed(conversions))
            elif kind == "getitem":  # one output of a multi-output CPU op (native_group_norm, ...)
                node = node.args[0]
            else:  # a model input or a CPU node; None for a constant, a weight or a buffer
                return (top[node], None, tuple(reversed(conversions))) if node in top else None

    for node in graph_module.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            top[node] = vertex_id(node.name, "io")
            vertices[top[node]] = Vertex(top[node], "input", "io", _shape(node))
        elif node.op == "call_function" and node not in inner and _kind(node) is None \
                and not _is_delegate_call(node):
            r = reasons.get(node.name)
            top[node] = vertex_id(node.name, CPU)
            vertices[top[node]] = Vertex(top[node], r.op if r else op_name(node.target), CPU, _shape(node),
                                         reason=r.reason if r else None, hint=r.hint if r else None,
                                         kernel=kernels.get(node.name), macs=_macs.node_macs(node))
    for node in graph_module.graph.nodes:
        if node in top and vertices[top[node]].place == CPU:
            for a in _inputs(node):
                _link(edges, outside(a), top[node], _shape(a))
        elif node in inner:
            tag, placeholders, _, ids = inner[node]
            for k, a in enumerate(node.args[1:]):
                src = outside(a)
                conv = ("transpose",) if k < len(flags.get(tag, ())) and flags[tag][k] == 1 else ()
                for user in _users_of_input(placeholders[k], ids):
                    if src is not None:
                        _link(edges, (src[0], src[1], src[2] + conv), user, _shape(a), f"{tag}:in:{k}")
        elif node.op == "output":
            for k, a in enumerate(node.args[0]):
                vid = f"output {k}" if len(node.args[0]) > 1 else "output"
                vertices[vid] = Vertex(vid, "output", "io", _shape(a))
                _link(edges, outside(a), vid, _shape(a))
    for tag, placeholders, _, ids in inner.values():  # edges inside each partition
        for n, vid in ids.items():
            for a in _inputs(n):
                found = inside(a, placeholders, ids)
                if found is not None and found[0] == "node":
                    edges.append(Edge(found[1], vid, _shape(a)))
    return ProgramGraph(vertices, edges, partitions, boundary_tensors=boundary, aliases=aliases)


def layer_costs(partition) -> tuple[list[dict], str] | None:
    """A partition's per-layer estimate, `[{"name": TFLite output tensor, "cycles": n, ...}]`, and its unit, from
    its back end's estimate (`PartitionReport.estimate`, where the report carries one)."""
    estimate = getattr(partition, "estimate", None)
    if isinstance(estimate, dict) and estimate.get("layers"):
        return estimate["layers"], f"cycles ({estimate['by']})"
    return None


def apply_costs(graph: ProgramGraph, partitions) -> ProgramGraph:
    """Put each partition's per-layer estimate on the vertices that compute those layers. A layer is found by its
    output tensor's name (the compute node's, or its quantize node's), so a layer the compiler fused (a
    convolution with the ReLU after it) lands on its last node; layers of tensors the converter added (layout
    transposes at the partition's inputs and outputs) end at no vertex and are summed per partition."""
    parts = {p.tag: p for p in graph.partitions}
    for p in partitions:
        found = layer_costs(p)
        if found is None or p.tag not in parts:
            continue
        layers, graph.cost_unit = found
        for layer in layers:
            v = graph.vertices.get(layer_vertex(graph, p.tag, layer["name"]) or "")
            if v is not None:
                v.cost = (v.cost or 0) + layer["cycles"]
                v.layers.append(layer.get("op", "?"))
            else:
                parts[p.tag].unattributed_cost += layer["cycles"]
    return graph


_INSERTED = re.compile(r"t\d+(?:_rank3)?_(natural|channels_last)|t\d+_rank\d+")


def layer_vertex(graph: ProgramGraph, tag: str, name: str) -> str | None:
    """The vertex a layer of partition `tag` (named by its TFLite output tensor) computes: the model node, or for a
    layer with a fused activation (its output tensor is the activation's) the producer, its main op."""
    vid = graph.aliases.get((tag, name))
    if vid is None:
        return None
    return graph.vertices[vid].fused_into or vid


def layer_label(graph: ProgramGraph | None, tag: str, name: str, op: str = "") -> str:
    """How the report names a layer (TFLite operator `op`, or its compiler's) of partition `tag` from its output tensor
    `name`: the model node it computes ("aten_convolution_default"), a fused layer after its main op with the
    activation beside it ("aten_convolution_default + relu"; the activation's own row, where the compiler lists
    one, "relu fused into aten_convolution_default"), a layout change the converter inserted at the partition's
    boundary as such ("inserted transpose to NHWC")."""
    inserted = _INSERTED.fullmatch(name)
    if inserted:
        layout = inserted.group(1)
        return (f"inserted transpose to {'NHWC' if layout == 'channels_last' else 'NCHW'}" if layout else
                "inserted reshape")
    vid = graph.aliases.get((tag, name)) if graph is not None else None
    if vid is None:
        return name
    v = graph.vertices[vid]
    if v.fused_into is None:
        return vid
    own = op.lower().replace("_", "").startswith(("relu", "clamp", "minimum", "maximum", "hardtanh"))
    return f"{v.label} fused into {v.fused_into}" if own else f"{v.fused_into} + {v.label}"


def _is_delegate_call(node) -> bool:
    return getattr(node.target, "__name__", "") == "executorch_call_delegate"


def _users_of_input(placeholder, ids: dict) -> list[str]:
    """The compute nodes inside a partition that read one of its inputs (through its dequantize), as vertex ids
    (`ids`: the partition's compute node -> vertex id)."""
    out, todo = [], list(placeholder.users)
    while todo:
        u = todo.pop(0)
        if _kind(u) in ("quantize", "dequantize"):
            todo.extend(u.users)
        elif u in ids and ids[u] not in out:
            out.append(ids[u])
    return out


def _link(edges, src, dst, shape, in_port=None) -> None:
    if src is None:
        return
    vertex, out_port, conversions = src
    ports = tuple(p for p in (out_port, in_port) if p)
    edges.append(Edge(vertex, dst, shape, ports, conversions))

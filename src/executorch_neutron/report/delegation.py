"""The delegation report of one lowering: partitions (nodes, ops, io, payload) and every CPU node with its reason.

Built from the partitioner's decisions and the lowered modules of the edge program; printable as text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..compile_spec import NeutronCompileSpec
from ..partition.support import Rejection


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

    @property
    def tflite(self) -> bytes:
        from ..payload import unpack

        return unpack(self.blob).tflite


@dataclass
class DelegationReport:
    target: str
    partitions: list[PartitionReport]
    rejections: list[Rejection]

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
    def num_delegated(self) -> int:
        return sum(len(p.nodes) for p in self.partitions)

    @property
    def num_compute(self) -> int:
        return self.num_delegated + len(self.rejections)

    def summary_line(self) -> str:
        n, total = self.num_delegated, self.num_compute
        share = 100.0 * n / total if total else 0.0
        return (f"{n} of {total} compute nodes ({share:.1f}%) on the Neutron NPU in {len(self.partitions)} "
                f"partition(s); {len(self.rejections)} on the CPU")

    def __str__(self) -> str:
        lines = [f"Neutron delegation report (target {self.target})", self.summary_line(), ""]
        for p in self.partitions:
            ops = ", ".join(f"{op} x{c}" for op, c in sorted(p.ops.items()))
            lines.append(f"[{p.tag}] {len(p.nodes)} nodes, payload {p.kind} {len(p.blob)} bytes")
            lines.append(f"    inputs {p.input_shapes} formats {list(p.input_formats)}; "
                         f"outputs {p.output_shapes} formats {list(p.output_formats)}")
            lines.append(f"    ops: {ops}")
        if self.rejections:
            lines.append("")
            lines.append("On the CPU:")
            for r in self.rejections:
                hint = f" (hint: {r.hint})" if r.hint else ""
                lines.append(f"    {r.op} {r.node}: {r.reason}{hint}")
        return "\n".join(lines)

    @classmethod
    def build(cls, exported, edge, partitioner, spec: NeutronCompileSpec) -> "DelegationReport":
        from ..backend import partition_name
        from ..ops.registry import op_name
        from ..payload import unpack

        gm = edge.exported_program().graph_module
        partitions = []
        for node in gm.graph.nodes:
            if node.op != "get_attr" or not node.target.startswith("lowered_module"):
                continue
            lowered = getattr(gm, node.target)
            original = lowered.original_module
            tag = partition_name(original)
            compute = [n for n in original.graph.nodes if n.name in set(partitioner.partition_tags.get(tag, []))]
            payload = unpack(lowered.processed_bytes)
            placeholders = [n for n in original.graph.nodes if n.op == "placeholder"
                            and n.name in original.graph_signature.user_inputs]
            outputs = next(n for n in original.graph.nodes if n.op == "output").args[0]
            partitions.append(PartitionReport(
                tag=tag,
                nodes=[n.name for n in compute],
                ops=Counter(op_name(n.target) for n in compute),
                blob=bytes(lowered.processed_bytes),
                kind=payload.kind,
                input_shapes=[tuple(n.meta["val"].shape) for n in placeholders],
                output_shapes=[tuple(n.meta["val"].shape) for n in outputs],
                input_formats=payload.header.input_formats,
                output_formats=payload.header.output_formats,
            ))
        return cls(spec.target, partitions, list(partitioner.rejections))

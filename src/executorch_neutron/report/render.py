"""Text, Markdown and JSON-ready renderings of a `DelegationReport` (HTML lives in html.py).

`to_dict` is the single source of the machine-readable form; its shape is the JSON Schema in schema.json
(`SCHEMA_PATH`), which tests validate against.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..target import get_target
from .graph import layer_label
from .macs import MAC_FORMULA
from .notes import FORMAT_NOTE, REQUANTIZE_NOTE

SCHEMA_PATH = Path(__file__).with_name("schema.json")
SCHEMA_VERSION = 8  # 6: quantized_io; 7: precision_notes; 8: memory budgets
FORMATS = {0: "none", 1: "channels_last"}  # a partition boundary's format flag in the JSON (schema.json)
FORMAT_WORDS = {0: "as given", 1: "channels-last (NHWC)"}  # the same in the text, Markdown and HTML reports


def io_words(shapes, formats) -> str:
    """A partition's inputs or outputs for a reader: "[1, 3, 6, 5] as given, [1, 240] channels-last (NHWC)"."""
    return ", ".join(f"{list(s)} {FORMAT_WORDS.get(f, f)}" for s, f in zip(shapes, formats))


def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def human_macs(n: int) -> str:
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.2f} {unit}MAC"
    return f"{n} MAC"


def _io(shapes, formats) -> list[dict]:
    return [{"shape": list(s), "format": FORMATS.get(f, str(f))} for s, f in zip(shapes, formats)]


def to_dict(report) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "target": {"name": report.target, "sram_bytes": get_target(report.target).sram_bytes,
                   "constraints": report.constraints},
        "totals": {
            "compute_nodes": report.num_compute,
            "npu_nodes": report.num_delegated,
            "cpu_nodes": len(report.rejections),
            "cortex_m_nodes": len(report.cortex_m_rejections),
            "cpu_float_nodes": len(report.float_rejections),
            "npu_node_share": report.node_share,
            "total_macs": max(report.total_macs, report.npu_macs),
            "npu_macs": report.npu_macs,
            "npu_mac_share": report.mac_share,
            "partitions": len(report.partitions),
            "payload_bytes": report.payload_bytes,
            "cpu_constant_bytes": report.cpu_constant_bytes,
            "model_bytes": report.model_bytes,
            "pte_bytes": report.pte_bytes,
        },
        "mac_formula": MAC_FORMULA,
        "quantized_io": [{"side": q.side, "index": q.index, "dtype": q.dtype, "scale": q.scale,
                          "zero_point": q.zero_point, "qmin": q.qmin, "qmax": q.qmax} for q in report.quantized_io],
        "partitions": [
            {
                "tag": p.tag,
                "num_nodes": len(p.nodes),
                "nodes": list(p.nodes),
                "ops": dict(sorted(p.ops.items())),
                "inputs": _io(p.input_shapes, p.input_formats),
                "outputs": _io(p.output_shapes, p.output_formats),
                "macs": p.macs,
                "weight_bytes": p.weight_bytes,
                "largest_activation_bytes": p.largest_activation_bytes,
                "working_set_bytes": p.working_set_bytes,
                "payload": {"kind": p.kind, "bytes": p.payload_bytes,
                            **({"compiled_by": p.compiled_by} if p.compiled_by else {})},
                "backend": dict(p.backend),
            }
            for p in report.partitions
        ],
        "cpu": [
            {
                "op": op,
                "count": len(nodes),
                "macs": sum(n.macs for n in nodes),
                "nodes": [{"node": n.rejection.node, "reason": report.float_reason(n.rejection),
                           "hint": n.rejection.hint, "macs": n.macs} for n in nodes],
            }
            for op, nodes in report.cpu_groups.items()
        ],
        "cortex_m": {
            "core": report.cortex_m_core,
            "nodes": [{"node": r.node, "op": r.op, "kernel": report.cortex_m_kernels[r.node],
                       "npu_reason": r.reason} for r in report.cortex_m_rejections],
        },
        "cpu_requantizations": [
            {"node": r.node, "source": r.source, "from": {"scale": r.from_scale, "zero_point": r.from_zero_point},
             "to": {"scale": r.to_scale, "zero_point": r.to_zero_point}}
            for r in report.requantizations
        ],
        "precision_notes": [{"node": n, "note": note} for n, note in report.precision_notes.items()],
        "ops": [{"op": op, "npu": npu, "cpu": cpu, "npu_macs": m} for op, npu, cpu, m in op_rows(report)],
        "memory": report.memory.to_dict() if report.memory is not None else None,
        **({"estimate": estimate} if (estimate := estimate_dict(report)) else {}),
    }


def estimate_dict(report) -> dict | None:
    """The estimate block of the JSON report: who estimates, what it is, the total and each partition's."""
    total = report.estimate
    if total is None:
        return None
    return {"notes": report.estimate_notes, **total,
            "partitions": [{"tag": p.tag, **p.estimate} for p in report.partitions if p.estimate]}


def estimate_lines(report) -> list[str]:
    """The estimate's line in the totals: NPU cycles and time, and the CPU part where the back end estimates it."""
    e = report.estimate
    return [] if e is None else [estimate_line(e)]


def estimate_line(e: dict) -> str:
    """A total estimate (`Backend.estimate_total`) in one line, as compile's and `report`'s totals print it."""
    npu = e.get("npu_seconds", e["inference_seconds"])
    line = (f"{e['by']}: {1e3 * e['inference_seconds']:.3f} ms = NPU {e['cycles']:,} cycles = {1e3 * npu:.3f} ms at "
            f"{e['core_clock_hz'] / 1e6:g} MHz, {human_macs(e['macs'])}")
    if "cpu_seconds" in e:
        line += f" + CPU {1e3 * e['cpu_seconds']:.3f} ms ({e['cpu_nodes']} nodes)"
    return line + " (see the notes)"


def partition_estimate_line(e: dict, label=lambda name, op: name) -> str:
    """A partition's estimate in one line: its cycles and time, and its three costliest layers (`label(name, op)`
    names a layer: the model node it computes where the caller knows the graph)."""
    top = ", ".join(f"{label(la['name'], la['op'])} {la['op']} {100 * la['cycles'] / max(e['cycles'], 1):.0f}%"
                    for la in sorted(e.get("layers") or [], key=lambda la: -la["cycles"])[:3])
    return f"{e['by']}: {e['cycles']:,} cycles = {1e3 * e['inference_seconds']:.3f} ms" + (
        f"; most cycles: {top}" if top else "")


def section_words(section: dict) -> list[str]:
    """A partition's back-end section for a reader, one "key words: value" line per entry."""
    return [f"{key.replace('_', ' ')}: {' '.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
            for key, v in section.items()]


def layer_tables(report) -> list[tuple[str, list[dict], int]]:
    """Per partition: (tag, its layers with the most cycles first, its cycles), from its back end's estimate."""
    out = []
    for p in report.partitions:
        if p.estimate and p.estimate.get("layers") is not None:
            layers = sorted(p.estimate["layers"], key=lambda la: -la["cycles"])
            out.append((p.tag, layers, p.estimate["cycles"]))
    return out


def _layer_table_markdown(report) -> list[str]:
    tables = layer_tables(report)
    if not tables:
        return []
    out = ["", f"## Per layer ({report.estimate['by']}), most cycles first", "",
           "| partition | layer | operator | cycles | share | MACs |", "|---|---|---|---:|---:|---:|"]
    for tag, layers, total in tables:
        out += [f"| {tag} | `{layer_label(report.graph, tag, la['name'], la['op'])}` | {la['op']} | {la['cycles']:,} | "
                f"{100 * la['cycles'] / max(total, 1):.1f}% | {la['macs']:,} |" for la in layers]
    return out


def op_rows(report) -> list[tuple[str, int, int, int]]:
    """(op, nodes on the NPU, nodes on the CPU, MACs on the NPU) per operator, most frequent first."""
    npu, cpu = report.delegated_ops, report.cpu_ops
    op_macs = {}
    for p in report.partitions:
        for op, m in p.op_macs.items():
            op_macs[op] = op_macs.get(op, 0) + m
    ops = sorted(set(npu) | set(cpu), key=lambda o: (-(npu[o] + cpu[o]), o))
    return [(o, npu[o], cpu[o], op_macs.get(o, 0)) for o in ops]


def memory_lines(report) -> list[str]:
    """The memory section (memory.py), or why there is none."""
    if report.memory is None:
        return ["memory: not computed (no .pte yet: lower() reads it from the .pte it writes)"]
    return report.memory.lines()


def quantized_io_line(report) -> str | None:
    """What a quantized-I/O .pte takes and returns, or None (float I/O)."""
    if not report.quantized_io:
        return None
    return ("quantized I/O (the .pte takes and returns these tensors; q = round(x / scale) + zero point): "
            + "; ".join(str(q) for q in report.quantized_io))


def _totals_lines(report) -> list[str]:
    total = max(report.total_macs, report.npu_macs)
    return [
        report.summary_line(),
        f"MACs on the NPU: {human_macs(report.npu_macs)} of {human_macs(total)} ({100 * report.mac_share:.1f}%)",
        f"model size: {human_bytes(report.model_bytes)}" + ("" if report.pte_bytes is not None else
                                                            " (delegate payloads + CPU constants)"),
    ] + [line for line in (quantized_io_line(report),) if line] + estimate_lines(report)


def to_text(report) -> str:
    lines = [f"{report.npu} delegation report (target {report.target}, {report.limits})",
             *_totals_lines(report), *memory_lines(report), ""]
    for p in report.partitions:
        ops = ", ".join(f"{op} x{c}" for op, c in sorted(p.ops.items()))
        lines.append(f"[{p.tag}] {len(p.nodes)} nodes, {human_macs(p.macs)}, payload {p.kind} {p.payload_bytes} bytes"
                     + (f"; compiled by {p.compiled_by}" if p.compiled_by else ""))
        lines.append(f"    inputs {io_words(p.input_shapes, p.input_formats)}; "
                     f"outputs {io_words(p.output_shapes, p.output_formats)}")
        lines.append(f"    weights {human_bytes(p.weight_bytes)}, largest activation "
                     f"{human_bytes(p.largest_activation_bytes)}")
        lines.append(f"    ops: {ops}")
        lines += [f"    {words}" for words in section_words(p.backend)]
        if p.estimate:
            label = lambda name, op, tag=p.tag: layer_label(report.graph, tag, name, op)  # noqa: E731
            lines.append(f"    {partition_estimate_line(p.estimate, label)}")
    if report.precision_notes:
        lines += ["", "Precision (nodes not in the int8 default, and the quantizer's notes):"]
        lines += [f"  {node}: {note}" for node, note in report.precision_notes.items()]
    if report.requantizations:
        lines += ["", "Requantized on the CPU, between partitions (dequantize -> quantize with new parameters, as in "
                      "the quantized model):"]
        lines += [f"  {r.describe()}" for r in report.requantizations]
    if report.cortex_m_rejections:
        lines += ["", f"On the {report.cortex_m_core}, int8 (ExecuTorch Cortex-M backend, CMSIS-NN kernels):"]
        for op, nodes in report.cortex_m_groups.items():
            lines.append(f"  {op} x{len(nodes)}")
            lines += [f"    {n.rejection.node}: {report.cortex_m_kernels[n.rejection.node]} (not on the NPU: "
                      f"{n.rejection.reason})" for n in nodes]
    if report.float_rejections:
        lines += ["", "On the CPU:" if report.cortex_m_core is None else "On the CPU, float (portable kernels):"]
        for op, nodes in report.cpu_groups.items():
            lines.append(f"  {op} x{len(nodes)}")
            for n in nodes:
                r = n.rejection
                lines.append(f"    {r.node}: {report.float_reason(r)}" + (f" (hint: {r.hint})" if r.hint else ""))
    if report.folded:
        lines += ["", f"Folded at lowering (computed once on constants, stored in the .pte, not run on the CPU): "
                      f"{', '.join(report.folded)}"]
    notes = report.estimate_notes
    return "\n".join(lines + ([""] + notes if notes else []))


def _md_escape(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _memory_markdown(report) -> list[str]:
    mem = report.memory
    if mem is None:
        return ["", "## Memory", "", memory_lines(report)[0]]
    out = ["", "## Memory (from the .pte)", "", f"{mem.lines()[0]}", "",
           "| what | bytes | where | counted | source |", "|---|---:|---|---|---|"]
    for b in mem.blocks:
        counted = ("per call" if b.per_call else "yes") if b.counted else "inside another line"
        out.append(f"| {_md_escape(b.what)} | {b.bytes:,} | {b.where} | {counted}{' (estimate)' * b.estimated} | "
                   f"{_md_escape(b.source)} |")
    out += [""] + [f"- {_md_escape(line.strip())}" for line in mem.lines()[1 + len(mem.blocks):]]
    return out


def to_markdown(report) -> str:
    out = [f"# {report.npu} delegation report (target `{report.target}`, {report.limits})",
           ""]
    out += [f"- {_md_escape(line)}" for line in _totals_lines(report)]
    out += _memory_markdown(report)
    out += ["", "## Partitions", "",
            "| partition | nodes | MACs | inputs | outputs | weights | largest activation | payload |",
            "|---|---:|---:|---|---|---:|---:|---|"]
    for p in report.partitions:
        ins, outs = io_words(p.input_shapes, p.input_formats), io_words(p.output_shapes, p.output_formats)
        out.append(f"| {p.tag} | {len(p.nodes)} | {p.macs} | {ins} | {outs} | {p.weight_bytes} | "
                   f"{p.largest_activation_bytes} | {p.kind}, {p.payload_bytes} B |")
    sections = [f"- {p.tag}: {_md_escape(words)}" for p in report.partitions for words in section_words(p.backend)]
    out += ["", "Back end:", ""] + sections if sections else []
    out += _layer_table_markdown(report)
    out += ["", "## Operators", "", "| operator | on the NPU | on the CPU | NPU MACs |", "|---|---:|---:|---:|"]
    out += [f"| `{op}` | {n} | {c} | {m} |" for op, n, c, m in op_rows(report)]
    if report.cortex_m_rejections:
        out += ["", f"## On the {report.cortex_m_core}, int8 (Cortex-M backend)", "",
                "| operator | node | kernel | not on the NPU because |", "|---|---|---|---|"]
        for op, nodes in report.cortex_m_groups.items():
            out += [f"| `{op}` | {n.rejection.node} | `{report.cortex_m_kernels[n.rejection.node]}` | "
                    f"{_md_escape(n.rejection.reason)} |" for n in nodes]
    if report.float_rejections:
        title = "On the CPU" if report.cortex_m_core is None else "On the CPU, float"
        out += ["", f"## {title}", "", "| operator | node | reason | hint |", "|---|---|---|---|"]
        for op, nodes in report.cpu_groups.items():
            for n in nodes:
                r = n.rejection
                out.append(f"| `{op}` | {r.node} | {_md_escape(report.float_reason(r))} | "
                           f"{_md_escape(r.hint or '')} |")
    if report.precision_notes:
        out += ["", "## Precision", ""]
        out += [f"- {node}: {_md_escape(note)}" for node, note in report.precision_notes.items()]
    if report.requantizations:
        out += ["", "## Requantized on the CPU", "", f"{REQUANTIZE_NOTE}.", ""]
        out += [f"- {_md_escape(r.describe())}" for r in report.requantizations]
    out += ["", f"MACs: {MAC_FORMULA}.", "", f"Formats: {FORMAT_NOTE}."]
    out += [x for note in report.estimate_notes for x in ("", f"{_md_escape(note)}.")]
    return "\n".join(out) + "\n"

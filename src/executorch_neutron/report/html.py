"""A self-contained HTML page for a `DelegationReport`: inline CSS, no scripts, no network.

Sections: totals (node and MAC shares, model size), the memory section (memory.py: each line, where it lives,
totals against the target's SRAM and flash as bars), the program drawn as a graph
(graph_svg.py: partitions, CPU nodes and boundary crossings, inline SVG), a table of partitions (with each one's back-end section),
the back end's estimate per layer (where the cycles go, as bars), a per-operator view (NPU vs CPU counts)
and every CPU node with its reason and hint. Other stages' sections (`evaluate`'s accuracy) follow the cards
when given.
"""

from __future__ import annotations

from html import escape

from . import graph_svg
from .graph import layer_label
from .macs import MAC_FORMULA
from .notes import REQUANTIZE_NOTE
from .render import (FORMAT_WORDS, estimate_lines, human_bytes, human_macs, layer_tables, memory_lines, op_rows,
                     quantized_io_line, section_words)

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{border:1px solid #dde2ea;border-radius:8px;padding:10px 14px;min-width:170px}
.card b{display:block;font-size:20px}.card span{color:#5a6474;font-size:12px}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{border:1px solid #dde2ea;padding:5px 8px;text-align:left;
vertical-align:top}th{background:#f3f5f9}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:12.5px}.bar{height:12px;background:#eef1f5;border-radius:6px;overflow:hidden;width:320px;
display:inline-block;vertical-align:middle}.bar i{display:block;height:100%;background:#2f7d4f}
.bar.over i{background:#b3362d}.npu{color:#2f7d4f;font-weight:600}.cpu{color:#b3362d;font-weight:600}
.note{color:#5a6474;font-size:12px}
"""


def _layers(report) -> list[str]:
    """The back end's estimate per layer of each partition, most cycles first, with each layer's share of the
    partition's cycles (and what bounds it, where the estimate says)."""
    lines = estimate_lines(report)
    if not lines:
        return []
    out = [f"<h2>{escape(report.estimate['by'])} per layer</h2><p class='note'>{escape(lines[0])}</p>"]
    for tag, layers, total in layer_tables(report):
        bound = any("bound" in la for la in layers)
        out.append(f"<p><code>{escape(tag)}</code>: {total:,} cycles</p><table><tr><th>layer</th>"
                   "<th>operator</th><th>cycles</th><th>share of the cycles</th><th>MACs</th>"
                   + ("<th>bound by</th>" if bound else "") + "</tr>")
        for la in layers:
            share = la["cycles"] / max(total, 1)
            out.append(f"<tr><td><code>{escape(layer_label(report.graph, tag, la['name'], la['op']))}</code></td>"
                       f"<td>{escape(la['op'])}</td>"
                       f"<td class=n>{la['cycles']:,}</td><td><span class=bar><i style='width:{100 * share:.1f}%'>"
                       f"</i></span> {100 * share:.1f}%</td><td class=n>{escape(human_macs(la['macs']))}</td>"
                       + (f"<td>{escape(la.get('bound', ''))}</td>" if bound else "") + "</tr>")
        out.append("</table>")
    out += [f"<p class='note'>{escape(note)}.</p>" for note in report.estimate_notes]
    return out


def _memory(report) -> list[str]:
    """The memory section: one row per line of memory.py's section, then each place's total as a bar."""
    mem = report.memory
    if mem is None:
        return [f"<h2>Memory</h2><p class='note'>{escape(memory_lines(report)[0])}</p>"]
    out = [f"<h2>Memory (from the .pte)</h2><p class='note'>{escape(mem.lines()[0])}</p>",
           "<table><tr><th>what</th><th>bytes</th><th>where</th><th>counted</th><th>source</th></tr>"]
    for b in mem.blocks:
        counted = ("per call" if b.per_call else "yes") if b.counted else "inside another line"
        out.append(f"<tr><td>{escape(b.what)}</td><td class=n>{b.bytes:,}</td><td>{escape(b.where)}</td>"
                   f"<td>{counted}{' (estimate)' * b.estimated}</td><td>{escape(b.source)}</td></tr>")
    out.append("</table>")
    for t in mem.totals():
        need, have = t["required_bytes"], t["available_bytes"]
        if have:
            pct = min(100.0, max(0.5, 100 * need / have))  # a sliver stays visible
            out.append(f"<p>{escape(t['where'])}: {escape(human_bytes(need))} of {escape(human_bytes(have))} "
                       f"<span class='bar{'' if t['fits'] else ' over'}'><i style='width:{pct:.1f}%'></i></span> "
                       f"{'fits' if t['fits'] else '<b class=cpu>does not fit</b>'}</p>")
        else:
            out.append(f"<p>{escape(t['where'])}: {escape(human_bytes(need))} (no size of the target's "
                       f"{escape(t['where'])} known here)</p>")
    out += [f"<p class='note'>{escape(n)}</p>" for n in mem.notes]
    return out


def _card(value: str, label: str) -> str:
    return f'<div class="card"><b>{escape(value)}</b><span>{escape(label)}</span></div>'


def _io(shapes, formats) -> str:
    return "<br>".join(f"<code>{escape(str(list(s)))}</code> {escape(FORMAT_WORDS.get(f, str(f)))}"
                       for s, f in zip(shapes, formats))


def to_html(report, sections=()) -> str:
    """The page; `sections`: HTML fragments of other stages shown after the cards (e.g. `evaluate`'s accuracy)."""
    total_macs = max(report.total_macs, report.npu_macs)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{report.npu} delegation report: {escape(report.target)}</title><style>{_CSS}{graph_svg.CSS}"
        "</style></head><body>",
        f"<h1>{report.npu} delegation report</h1><div class='note'>target <code>{escape(report.target)}</code>, "
        f"{escape(report.limits)}</div>",
        "<div class='cards'>",
        _card(f"{100 * report.node_share:.1f}%", f"compute nodes on the NPU ({report.num_delegated} of "
                                                  f"{report.num_compute})"),
        _card(f"{100 * report.mac_share:.1f}%", f"MACs on the NPU ({human_macs(report.npu_macs)} of "
                                                f"{human_macs(total_macs)})"),
        _card(str(len(report.partitions)), "partitions"),
        _card(human_bytes(report.model_bytes), "model size"),
        "</div>",
        *([f"<p class='note'>{escape(line)}</p>"] if (line := quantized_io_line(report)) else []),
        *sections,
        *_memory(report),
        *graph_svg.section(report.graph),
        "<h2>Partitions</h2><table><tr><th>partition</th><th>nodes</th><th>MACs</th><th>inputs</th><th>outputs</th>"
        "<th>weights</th><th>largest activation</th><th>payload</th><th>ops</th></tr>",
    ]
    for p in report.partitions:
        ops = "<br>".join(f"<code>{escape(op)}</code> &times;{c}" for op, c in sorted(p.ops.items()))
        parts.append(
            f"<tr><td><code>{escape(p.tag)}</code></td><td class=n>{len(p.nodes)}</td><td class=n>"
            f"{escape(human_macs(p.macs))}</td><td>{_io(p.input_shapes, p.input_formats)}</td>"
            f"<td>{_io(p.output_shapes, p.output_formats)}</td><td class=n>{escape(human_bytes(p.weight_bytes))}</td>"
            f"<td class=n>{escape(human_bytes(p.largest_activation_bytes))}</td><td>{escape(p.kind)}<br>"
            f"{escape(human_bytes(p.payload_bytes))}"
            + "".join(f"<br><span class='note'>{escape(w)}</span>" for w in section_words(p.backend))
            + f"</td><td>{ops}</td></tr>")
    if not report.partitions:
        parts.append("<tr><td colspan=9>nothing was delegated</td></tr>")
    parts.append("</table>")
    parts += _layers(report)
    parts.append("<h2>Operators</h2><table><tr><th>operator</th><th>on the NPU</th><th>on the CPU</th>"
                 "<th>NPU MACs</th></tr>")
    for op, n, c, m in op_rows(report):
        parts.append(f"<tr><td><code>{escape(op)}</code></td><td class='n npu'>{n or ''}</td>"
                     f"<td class='n cpu'>{c or ''}</td><td class=n>{escape(human_macs(m)) if m else ''}</td></tr>")
    parts.append("</table>")
    if report.cortex_m_rejections:
        parts.append(f"<h2>On the {escape(report.cortex_m_core)}, int8 (Cortex-M backend)</h2><table><tr>"
                     "<th>operator</th><th>node</th><th>kernel</th><th>not on the NPU because</th></tr>")
        for op, nodes in report.cortex_m_groups.items():
            parts += [f"<tr><td><code>{escape(op)}</code></td><td><code>{escape(n.rejection.node)}</code></td>"
                      f"<td><code>{escape(report.cortex_m_kernels[n.rejection.node])}</code></td>"
                      f"<td>{escape(n.rejection.reason)}</td></tr>" for n in nodes]
        parts.append("</table>")
    if report.float_rejections:
        title = "On the CPU" if report.cortex_m_core is None else "On the CPU, float"
        parts.append(f"<h2>{title}</h2><table><tr><th>operator</th><th>node</th><th>reason</th><th>hint</th></tr>")
        for op, nodes in report.cpu_groups.items():
            for i, n in enumerate(nodes):
                r = n.rejection
                head = f"<td rowspan={len(nodes)}><code>{escape(op)}</code> &times;{len(nodes)}</td>" if i == 0 else ""
                parts.append(f"<tr>{head}<td><code>{escape(r.node)}</code></td><td>{escape(report.float_reason(r))}"
                             f"</td><td>{escape(r.hint or '')}</td></tr>")
        parts.append("</table>")
    if report.precision_notes:
        parts.append("<h2>Precision</h2><ul>")
        parts += [f"<li><code>{escape(n)}</code>: {escape(note)}</li>" for n, note in report.precision_notes.items()]
        parts.append("</ul>")
    if report.requantizations:
        parts.append(f"<h2>Requantized on the CPU</h2><p class='note'>{escape(REQUANTIZE_NOTE)}.</p><ul>")
        parts += [f"<li><code>{escape(r.describe())}</code></li>" for r in report.requantizations]
        parts.append("</ul>")
    parts.append(f"<p class='note'>MACs: {escape(MAC_FORMULA)}.</p></body></html>")
    return "\n".join(parts)


"""The program graph (report/graph.py) drawn as inline SVG for the HTML report: no script, no network.

Two levels keep a large model (a ViT: hundreds of nodes) readable: an overview where each partition is one box
(its node count, MACs and operators) between the model's inputs, outputs and the nodes left on the CPU, and one
graph per partition that the reader expands (`<details>`). Layout: grandalf's Sugiyama layered layout (a pure
Python library) per connected component, components side by side.

What the SVG carries, for readers and tests alike: every vertex is one `<g class="node ...">` with
`data-node="<id>"` and a class naming where it runs (`part-<tag>` plus `npu`, or `cpu`, or `io`); each has a
`<title>` (the tooltip: operator, shape, partition, and on the CPU the reason and hint); an edge where a tensor
crosses a partition boundary is `<path class="edge crossing" data-ports="neutron_0:out:0 ...">` with the
conversion it costs (quantize, dequantize, transpose) in its title and as a short label.
"""

from __future__ import annotations

import math
import textwrap
from html import escape

from .graph import CPU, Edge, ProgramGraph
from .render import human_bytes, human_macs

_HUES = (145, 210, 265, 185, 320, 95, 235, 290, 160, 250)  # one per partition, none near the CPU's red
_CHAR_W = 7.0  # mean advance of a 12 px system-ui character, for box widths
_H = 28
_MAX_LABEL = 40
_COLUMN_H = 1500  # a partition graph taller than this is laid out in columns (_fold)
_SHORT = {"quantize": "Q", "dequantize": "DQ", "transpose": "T"}

CSS = """
.graph-wrap{overflow:auto;max-height:85vh;border:1px solid #dde2ea;border-radius:8px;margin:6px 0 12px;
background:#fbfcfd}.graph-wrap svg{display:block;font:12px system-ui,-apple-system,Segoe UI,Roboto,sans-serif}
.node text{pointer-events:none}.edge{fill:none;stroke:#8a94a6;stroke-width:1.2}
.edge.crossing{stroke:#d9822b;stroke-width:2.2;stroke-dasharray:6 3}.xlabel{fill:#a65d12;font-size:10px;
font-weight:600}.legend{display:flex;flex-wrap:wrap;gap:6px 14px;font-size:12px;margin:4px 0}
.legend i{display:inline-block;width:12px;height:12px;border-radius:3px;vertical-align:-2px;margin-right:4px;
border:1px solid #5a6474}details.part{margin:4px 0}details.part summary{cursor:pointer}
"""


def hue(graph: ProgramGraph, tag: str) -> int:
    tags = [p.tag for p in graph.partitions]
    return _HUES[tags.index(tag) % len(_HUES)] if tag in tags else 0


def _fmt_shape(shape) -> str:
    return "" if shape is None else "[" + ", ".join(str(d) for d in shape) + "]"


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "\u2026"


class _Box:
    """One drawn vertex: its lines of text, its classes, fill and stroke, its tooltip and an optional link."""

    def __init__(self, key, lines, classes, fill, stroke, title, text_color="#1d2430", href=None, data=None):
        self.key, self.lines, self.classes = key, [_clip(s) for s in lines], classes
        self.fill, self.stroke, self.title, self.text_color, self.href = fill, stroke, title, text_color, href
        self.data = data or {}
        self.w = max(60.0, 16 + _CHAR_W * max(len(s) for s in self.lines))
        self.h = _H + 15 * (len(self.lines) - 1)
        self.xy = (0.0, 0.0)


def _layout(boxes: list[_Box], links: list[tuple[str, str, object]]) -> tuple[float, float, list]:
    """Place the boxes (grandalf Sugiyama, per connected component); returns width, height and the routed links
    as (points, payload)."""
    from grandalf.graphs import Edge as GEdge
    from grandalf.graphs import Vertex, graph_core
    from grandalf.layouts import SugiyamaLayout

    class View:
        def __init__(self, w, h):
            self.w, self.h, self.xy = w, h, (0.0, 0.0)

    class Path:
        def __init__(self):
            self.points, self.folded = [], False

        def setpath(self, pts):
            self.points = list(pts)

    by_key = {}
    for b in boxes:
        v = Vertex(b.key)
        v.view = View(b.w, b.h)
        by_key[b.key] = (v, b)
    gedges = []
    for src, dst, payload in links:
        if src in by_key and dst in by_key and src != dst:
            e = GEdge(by_key[src][0], by_key[dst][0], data=payload)
            e.view = Path()
            gedges.append(e)
    x0, width, height, margin = 0.0, 0.0, 0.0, 16.0
    for component in _components(by_key, gedges, graph_core):
        layout = SugiyamaLayout(component)
        layout.xspace, layout.yspace = 24, 34
        layout.init_all()
        layout.draw()
        _fold(component)
        xs = [v.view.xy[0] - v.view.w / 2 for v in component.sV] + [
            p[0] for e in component.sE for p in e.view.points]
        xmin = min(xs)
        xmax = max([v.view.xy[0] + v.view.w / 2 for v in component.sV] + [
            p[0] for e in component.sE for p in e.view.points])
        dx = x0 + margin - xmin
        for v in component.sV:
            v.view.xy = (v.view.xy[0] + dx, v.view.xy[1] + margin)
            height = max(height, v.view.xy[1] + v.view.h / 2 + margin)
        for e in component.sE:
            e.view.points = [(x + dx, y + margin) for x, y in e.view.points]
        x0 = x0 + margin + (xmax - xmin) + 16
        width = x0 + margin
    routed = []
    for e in gedges:
        (src, _), (dst, _) = by_key[e.v[0].data], by_key[e.v[1].data]
        pts = e.view.points or [src.view.xy, dst.view.xy]
        if pts[0][1] > pts[-1][1] and not e.view.folded:  # an edge the layout inverted to break a cycle
            pts = pts[::-1]
        pts[0] = (pts[0][0], src.view.xy[1] + src.view.h / 2)
        pts[-1] = (pts[-1][0], dst.view.xy[1] - dst.view.h / 2)
        routed.append((pts, e.data))
    for v, b in by_key.values():
        b.xy = v.view.xy
    return width, height, routed


def _fold(component) -> None:
    """Lay a tall layered layout out in columns: its layers cut into bands of at most _COLUMN_H, each band set to
    the right of the one before (a deep partition reads across the page instead of down 5000 px). An edge between
    two bands becomes a straight line from its source to its target (`folded`)."""
    top = min((v.view.xy[1] for v in component.sV), default=0)
    if max((v.view.xy[1] for v in component.sV), default=0) - top <= _COLUMN_H:
        return

    def band(y: float) -> int:
        return int((y - top) // _COLUMN_H)

    spans: dict[int, list[float]] = {}  # band -> [left, right, first y]
    for v in component.sV:
        b = band(v.view.xy[1])
        left, right = v.view.xy[0] - v.view.w / 2, v.view.xy[0] + v.view.w / 2
        span = spans.setdefault(b, [left, right, v.view.xy[1] - v.view.h / 2])
        span[0], span[1], span[2] = min(span[0], left), max(span[1], right), min(span[2], v.view.xy[1] - v.view.h / 2)
    shift, x = {}, 0.0
    for b in sorted(spans):
        left, right, first = spans[b]
        shift[b] = (x - left, top - first)
        x += right - left + 48

    def moved(point, b):
        return point[0] + shift[b][0], point[1] + shift[b][1]

    for e in component.sE:
        bands = {band(y) for _, y in e.view.points} | {band(e.v[0].view.xy[1]), band(e.v[1].view.xy[1])}
        if len(bands) == 1:
            (b,) = bands
            e.view.points = [moved(p, b) for p in e.view.points]
        else:
            e.view.points = [moved(e.v[0].view.xy, band(e.v[0].view.xy[1])),
                             moved(e.v[1].view.xy, band(e.v[1].view.xy[1]))]
            e.view.folded = True
    for v in component.sV:
        v.view.xy = moved(v.view.xy, band(v.view.xy[1]))


def _components(by_key: dict, edges: list, graph_core) -> list:
    """grandalf graphs of the connected components, in the order of their first vertex (union-find: grandalf's own
    `Graph` merges components in quadratic time, seconds for a 450-node partition)."""
    parent = {key: key for key in by_key}

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for e in edges:
        parent[root(e.v[0].data)] = root(e.v[1].data)
    groups: dict = {}
    for key, (v, _) in by_key.items():
        groups.setdefault(root(key), ([], []))[0].append(v)
    for e in edges:
        groups[root(e.v[0].data)][1].append(e)
    return [graph_core(vs, es) for vs, es in groups.values()]


def _int8_bytes(e: Edge) -> int | None:
    """The bytes of the int8 tensor an edge hands over at a partition boundary (None: shape unknown)."""
    return None if e.shape is None else math.prod(e.shape)


def _edge_title(e: Edge) -> str:
    text = f"{e.src} -> {e.dst} {_fmt_shape(e.shape)}"
    if e.crossing:
        ports = ", ".join(p.replace(":in:", " input ").replace(":out:", " output ") for p in e.ports)
        cost = ", ".join(e.conversions) or "int8 handed over as is"
        size = _int8_bytes(e)
        text += f"\ncrosses a partition boundary ({ports}"
        text += f", {human_bytes(size)} of int8): {cost}" if size is not None else f"): {cost}"
        if "quantize" in e.conversions or "dequantize" in e.conversions:
            text += " on the CPU"
    return text


def _svg(boxes: list[_Box], links: list[tuple[str, str, Edge]], label: str, uid: str) -> str:
    width, height, routed = _layout(boxes, links)
    out = [f'<svg width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(label)}">',
           f'<defs><marker id="a{uid}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9" '
           f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#5a6474"/></marker></defs>']
    for pts, e in routed:
        d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        cls = "edge crossing" if e.crossing else "edge"
        ports = f' data-ports="{escape(" ".join(e.ports))}"' if e.crossing else ""
        out.append(f'<path class="{cls}"{ports} d="{d}" marker-end="url(#a{uid})"><title>{escape(_edge_title(e))}'
                   f'</title></path>')
        if e.crossing:
            (x1, y1), (x2, y2) = pts[len(pts) // 2 - 1], pts[len(pts) // 2]
            text = "+".join(_SHORT[c] for c in e.conversions) or "int8"
            size = _int8_bytes(e)
            text += f" {human_bytes(size)}" if size is not None else ""
            out.append(f'<text class="xlabel" x="{(x1 + x2) / 2 + 5:.1f}" y="{(y1 + y2) / 2 + 3:.1f}">'
                       f'{escape(text)}</text>')
    for b in boxes:
        x, y = b.xy[0] - b.w / 2, b.xy[1] - b.h / 2
        data = "".join(f' data-{k}="{escape(str(v))}"' for k, v in b.data.items())
        g = [f'<g class="{" ".join(b.classes)}"{data}><title>{escape(b.title)}</title>',
             f'<rect x="{x:.1f}" y="{y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="5" fill="{b.fill}" '
             f'stroke="{b.stroke}" stroke-width="{2 if "partition" in b.classes else 1.2}"/>']
        for i, line in enumerate(b.lines):
            weight = ' font-weight="600"' if i == 0 and len(b.lines) > 1 else ""
            g.append(f'<text x="{b.xy[0]:.1f}" y="{y + 18 + 15 * i:.1f}" text-anchor="middle" '
                     f'fill="{b.text_color}"{weight}>{escape(line)}</text>')
        g.append("</g>")
        if b.href:
            g = [f'<a href="{escape(b.href)}">', *g, "</a>"]
        out += g
    out.append("</svg>")
    return "\n".join(out)


def _vertex_box(graph: ProgramGraph, vid: str, max_cost: float) -> _Box:
    v = graph.vertices[vid]
    shape = _fmt_shape(v.shape)
    lines = [v.label] + ([shape] if shape else [])
    if v.place == "io":
        return _Box(vid, lines, ["node", "io"], "#eef1f5", "#5a6474", f"model {v.op} {vid} {shape}",
                    data={"node": vid})
    if v.place == CPU:
        title = f"{v.op} ({vid}) {shape}\non the CPU" + (f" as the int8 kernel {v.kernel}" if v.kernel else
                                                          ", float")
        title += f"\nreason: {v.reason}" if v.reason else ""
        title += f"\nhint: {v.hint}" if v.hint else ""
        fill, stroke = ("#fbe7c0", "#a86b00") if v.kernel else ("#f8d7d3", "#b3362d")
        if v.reason:  # on the node itself, two lines at most (the whole reason and the hint: the tooltip)
            lines += textwrap.wrap(v.reason, _MAX_LABEL, max_lines=2, placeholder=" \u2026")
        return _Box(vid, lines, ["node", "cpu"] + (["cortex-m"] if v.kernel else []), fill, stroke, title,
                    data={"node": vid})
    h = hue(graph, v.place)
    title = f"{v.op} ({vid}) {shape}\non the NPU, partition {v.place}"
    title += f"\n{human_macs(v.macs)}" if v.macs else ""
    light, text = 84, "#1d2430"
    if v.cost is not None and max_cost > 0:
        share = v.cost / max_cost
        light = round(92 - 50 * share)  # the costliest node darkest
        text = "#ffffff" if light < 62 else text
        title += f"\n{v.cost:,.0f} {graph.cost_unit}, layer(s) {', '.join(v.layers)}"
    classes = ["node", "npu", f"part-{v.place}"] + (["costed"] if v.cost is not None else [])
    return _Box(vid, lines, classes, f"hsl({h},45%,{light}%)", f"hsl({h},45%,32%)", title, text,
                data={"node": vid, "cost": f"{v.cost:g}"} if v.cost is not None else {"node": vid})


def overview_svg(graph: ProgramGraph) -> str:
    """Each partition as one box (linked to its expandable graph), the CPU nodes and the model's inputs/outputs."""
    owner = {vid: (v.place if v.place not in (CPU, "io") else vid) for vid, v in graph.vertices.items()}
    boxes = []
    for p in graph.partitions:
        h = hue(graph, p.tag)
        ops = {}
        for n in p.nodes:
            label = graph.vertices[n].label
            ops[label] = ops.get(label, 0) + 1
        top = ", ".join(f"{op} x{c}" if c > 1 else op for op, c in sorted(ops.items(), key=lambda kv: -kv[1])[:3])
        cost = sum(graph.vertices[n].cost or 0 for n in p.nodes) + p.unattributed_cost
        lines = [p.tag, f"{len(p.nodes)} nodes, {human_macs(p.macs)}", top + (", ..." if len(ops) > 3 else "")]
        if cost:
            lines.insert(2, f"{cost:,.0f} {graph.cost_unit.split(' ')[0]}")
        title = (f"partition {p.tag}: {len(p.nodes)} nodes on the NPU, {human_macs(p.macs)}, {p.inputs} input(s), "
                 f"{p.outputs} output(s)\n" + ", ".join(f"{op} x{c}" for op, c in sorted(ops.items())))
        if p.unattributed_cost:
            title += (f"\n{p.unattributed_cost:,.0f} {graph.cost_unit} in layers of no model node (layout "
                      "transposes at its boundary)")
        boxes.append(_Box(p.tag, lines, ["partition", f"part-{p.tag}"], f"hsl({h},45%,90%)", f"hsl({h},45%,32%)",
                          title, href=f"#part-{p.tag}", data={"partition": p.tag}))
    max_cost = max((v.cost or 0 for v in graph.vertices.values()), default=0)
    boxes += [_vertex_box(graph, vid, max_cost) for vid, v in graph.vertices.items() if v.place in (CPU, "io")]
    links, seen = [], set()
    for e in graph.edges:
        src, dst = owner[e.src], owner[e.dst]
        key = (src, dst, e.ports, e.conversions)
        if src != dst and key not in seen:
            seen.add(key)
            links.append((src, dst, e))
    return _svg(boxes, links, "the program: partitions, CPU nodes, inputs and outputs", "o")


def partition_svg(graph: ProgramGraph, tag: str) -> str:
    """One partition's compute nodes, with a stub per boundary tensor naming where it comes from or goes to."""
    max_cost = max((v.cost or 0 for v in graph.vertices.values()), default=0)
    members = {vid for vid, v in graph.vertices.items() if v.place == tag}
    boxes = [_vertex_box(graph, vid, max_cost) for vid in graph.vertices if vid in members]
    links, stubs = [], {}
    for e in graph.edges:
        if e.src in members and e.dst in members:
            links.append((e.src, e.dst, e))
        elif e.src in members or e.dst in members:
            outer = e.dst if e.src in members else e.src
            where = graph.vertices[outer].place
            port = next(p for p in e.ports if p.startswith(tag + ":"))
            key = f"stub {port} {outer}"
            if key not in stubs:
                side = "to" if e.src in members else "from"
                name = graph.vertices[outer].label if where in (CPU, "io") else where
                stubs[key] = _Box(key, [f"{side} {name}"], ["stub"], "#ffffff", "#8a94a6",
                                  f"{port.replace(':', ' ')}: {side} {outer} ({where})")
            links.append((e.src, key, e) if e.src in members else (key, e.dst, e))
    boxes += stubs.values()
    return _svg(boxes, links, f"partition {tag}", tag)


def legend(graph: ProgramGraph) -> str:
    items = [f'<span><i style="background:hsl({hue(graph, p.tag)},45%,84%)"></i>{escape(p.tag)}</span>'
             for p in graph.partitions]
    items.append('<span><i style="background:#f8d7d3"></i>CPU (float)</span>')
    if any(v.kernel for v in graph.vertices.values()):
        items.append('<span><i style="background:#fbe7c0"></i>CPU (int8 Cortex-M kernel)</span>')
    items.append('<span><i style="background:#eef1f5"></i>model input / output</span>')
    items.append('<span style="color:#a65d12">- - - a tensor crossing a partition boundary: Q quantize, DQ dequantize '
                 '(on the CPU), T transpose, int8 handed over as is</span>')
    if graph.cost_unit:
        items.append(f"<span>darker NPU nodes cost more ({escape(graph.cost_unit)})</span>")
    return f"<div class='legend'>{''.join(items)}</div>"


OPEN_UP_TO = 120  # partitions of at most this many nodes are drawn expanded (a larger one: click to open)


def section(graph: ProgramGraph | None) -> list[str]:
    """The report's graph section: legend, overview, and one expandable graph per partition."""
    if graph is None:
        return []
    crossings = len(graph.boundary_tensors)
    out = ["<h2 id='graph'>Graph</h2>", legend(graph),
           f"<p class='note'>Each coloured box is a partition on the NPU (click it, or open it below, to see its "
           f"nodes); red nodes stay on the CPU, with the reason on the node (hover for all of it and the hint). "
           f"{crossings} tensor(s) cross a partition boundary, each labelled with what it costs and the bytes of "
           f"int8 it hands over.</p>", f"<div class='graph-wrap'>{overview_svg(graph)}</div>"]
    for p in graph.partitions:
        opened = " open" if len(p.nodes) <= OPEN_UP_TO else ""
        out.append(f"<details class='part' id='part-{escape(p.tag)}'{opened}><summary><code>{escape(p.tag)}</code>: "
                   f"{len(p.nodes)} nodes, {p.inputs} input(s), {p.outputs} output(s)</summary>"
                   f"<div class='graph-wrap'>{partition_svg(graph, p.tag)}</div></details>")
    return out

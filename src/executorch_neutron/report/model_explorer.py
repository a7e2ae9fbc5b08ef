"""Google's Model Explorer (`pip install ai-edge-model-explorer`) overlays for the partitions of a .pte.

`write_overlays(pte, out_dir)` writes, per delegate (named like the partition tags, `<prefix>_<n>`):

- `<name>.tflite`: the partition's int8 TFLite, as its back end finds it in the .pte (`Backend.pte_tflite`: a
  host-reference payload's, or a reference stored as named data);
- `<name>.placement.json`: node data saying where each operator runs ("NPU"; "CPU" for an operator the NPU
  compiler would leave to the CPU);
- `<name>.cycles.json`: node data with the per-layer estimate, where one exists: the back end's
  (`backends.Backend.layer_estimate`, from the TFLite and the delegate's compile specs), or one handed in
  (`estimates`, e.g. the report's per partition, which may hold a device compiler's own figures), which replaces
  the back end's; keyed by each layer's output tensor.

The node data is built with Model Explorer's own `model_explorer.node_data_builder` (keys: output tensor names,
which its TFLite adapter shows as `tensor_name`), so `model-explorer <name>.tflite --node_data_paths=
<name>.cycles.json,<name>.placement.json` opens the graph with both overlays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import backends
from ..core.atomic import write_bytes, write_text
from ..pte import read_pte
from ..tflite.reader import op_name, read_model, tensor_name

_NPU_COLOR, _CPU_COLOR = "#bfe3cc", "#f8d7d3"
_GRADIENT = (("#eef7f1", 0), ("#2f7d4f", 0.5), ("#b3362d", 1))  # (colour, stop): cheap -> costly


@dataclass
class PartitionOverlay:
    name: str  # <tag prefix>_<n>, as the partition tags
    backend: str
    tflite: bytes | None
    layers: list[dict] | None = None  # [{"name": output tensor, "op": ..., "cycles": n}, ...]
    unit: str | None = None
    cpu_tensors: set[str] = field(default_factory=set)  # outputs of operators the NPU compiler leaves to the CPU
    note: str = ""  # what is missing and why
    files: list[Path] = field(default_factory=list)  # what write_overlays wrote for it

    def command(self) -> str:
        """The command that opens the partition in Model Explorer with its overlays."""
        tflite, *data = [str(f) for f in self.files]
        return f"model-explorer {tflite}" + (f" --node_data_paths={','.join(data)}" if data else "")


def partitions_of(pte: bytes | str | Path) -> list[PartitionOverlay]:
    """One overlay per delegate of the .pte's first method, named as its partition was (`<tag prefix>_<k>`), with
    its TFLite and its back end's per-layer estimate where the back end has one (backends.py)."""
    pte_file = read_pte(pte)
    out, counts = [], {}
    for d in pte_file.program.execution_plan[0].delegates:
        blob = pte_file.blob(d)
        backend = backends.for_id(d.id)
        prefix = backend.partitioner.tag_prefix if backend else d.id
        name = f"{prefix}_{counts.setdefault(prefix, 0)}"
        counts[prefix] += 1
        if backend is None or backend.pte_tflite is None:
            out.append(PartitionOverlay(name, d.id, None, note=f"not a delegate of this package ({d.id})"))
            continue
        overlay = PartitionOverlay(name, d.id, backend.pte_tflite(blob, pte_file))
        if overlay.tflite is None:
            overlay.note = f"the .pte holds no TFLite for it: {backend.device_only}"
        elif backend.layer_estimate is not None:
            overlay.layers, overlay.unit = backend.layer_estimate(overlay.tflite, pte_file.compile_spec(d))
        out.append(overlay)
    return out


def _op_outputs(tflite: bytes) -> list[tuple[str, str]]:
    """(first output tensor name, TFLite operator) of every operator of the main subgraph."""
    model = read_model(tflite)
    sub = model.subgraphs[0]
    return [(tensor_name(sub, op.outputs[0]), op_name(model, op)) for op in sub.operators if len(op.outputs)]


def node_data(overlay: PartitionOverlay) -> dict[str, object]:
    """Model Explorer `ModelNodeData` objects by file suffix ("placement", and "cycles" when estimated)."""
    from model_explorer import node_data_builder as ndb

    graph = _subgraph_name(overlay.tflite)
    outputs = _op_outputs(overlay.tflite)
    placement = {t: ndb.NodeDataResult(value="CPU" if t in overlay.cpu_tensors else "NPU",
                                       bgColor=_CPU_COLOR if t in overlay.cpu_tensors else _NPU_COLOR)
                 for t, _ in outputs}
    data = {"placement": ndb.ModelNodeData(graphsData={graph: ndb.GraphNodeData(
        results=placement, name=f"{overlay.name}: where each operator runs")})}
    if overlay.layers:
        known = {t for t, _ in outputs}
        cycles: dict[str, float] = {}
        for layer in overlay.layers:
            if layer["name"] in known:
                cycles[layer["name"]] = cycles.get(layer["name"], 0) + layer["cycles"]
        data["cycles"] = ndb.ModelNodeData(graphsData={graph: ndb.GraphNodeData(
            results={t: ndb.NodeDataResult(value=v) for t, v in cycles.items()}, name=f"{overlay.name}: {overlay.unit}",
            gradient=[ndb.GradientItem(stop=s, bgColor=c) for c, s in _GRADIENT])})
    return data


def _subgraph_name(tflite: bytes) -> str:
    raw = read_model(tflite).subgraphs[0].name
    return (raw.decode() if isinstance(raw, (bytes, bytearray)) else raw) or "main"


def write_overlays(pte, out_dir: str | Path,
                   estimates: dict[str, tuple[list[dict], str]] | None = None) -> list[PartitionOverlay]:
    """Write each partition's TFLite and node data into `out_dir` (see the module docstring); returns every
    partition, with the files written for it (none, and a `note` saying why, where the .pte holds no TFLite).
    `estimates`: partition name -> (per-layer estimate, unit), used instead of the back end's own estimate."""

    out_dir = Path(out_dir)
    overlays = partitions_of(pte)
    for overlay in overlays:
        if overlay.tflite is None:
            continue
        if estimates and overlay.name in estimates:
            overlay.layers, overlay.unit = estimates[overlay.name]
        overlay.files.append(write_bytes(out_dir / f"{overlay.name}.tflite", overlay.tflite))
        for suffix, data in node_data(overlay).items():
            overlay.files.append(write_text(out_dir / f"{overlay.name}.{suffix}.json", data.to_json_string(indent=2)))
    return overlays

"""A per-layer time estimate of Neutron partitions, from MACs and bytes moved (NXP publishes no cost model).

Per operator of the partition's int8 TFLite (what the NPU runs, the format transposes included), with the
target's figures (`NeutronTarget`: MACs/cycle, `npu_clock_hz`, `activation_bytes_per_cycle`,
`weight_bytes_per_cycle`; `estimate_sources` says which are published and which assumed):

    compute cycles = max(MACs, numel(output)) / MACs per cycle       (an operator without MACs: one output
                                                                       element per MAC unit and cycle)
    data cycles    = activation bytes read and written / activation bytes per cycle
                   + constant bytes (weights, biases) / weight bytes per cycle
    cycles         = max(compute cycles, data cycles)                 (the data mover overlaps compute)
    RESHAPE        = 0 cycles                                         (the same bytes under a new shape)

A partition's cycles are the sum of its operators'; the model's, the sum of its partitions'; time = cycles / NPU
clock. Where NXP's converter reports its own figures (the SDK is installed and the backend stores them under
`CONVERTER_KEY` in the lowered module's metadata), `from_converter` takes those instead.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ai_edge_litert.schema_py_generated import TensorType

from ..tflite.macs import tflite_op_macs
from ..tflite.reader import op_name, read_model

FORMULA = ("per TFLite operator: cycles = max(compute, data); compute = max(MACs, output elements) / MACs per "
           "cycle; data = activation bytes (read + written) / activation bytes per cycle + constant bytes "
           "(weights, biases) / weight bytes per cycle; RESHAPE 0; a partition sums its operators, the model its "
           "partitions; time = cycles / NPU clock")
#: the key of `_delegate_info_meta` under which a backend stores the converter's own per-layer figures
CONVERTER_KEY = "converter_estimate"
_FREE = {"RESHAPE"}


@dataclass(frozen=True)
class LayerEstimate:
    name: str  # the operator's output tensor (as in Vela's per-layer table)
    op: str
    cycles: int
    macs: int
    compute_cycles: int = 0
    data_cycles: int = 0
    activation_bytes: int = 0
    weight_bytes: int = 0

    @property
    def bound(self) -> str:
        return "compute" if self.compute_cycles >= self.data_cycles else "data"


@dataclass(frozen=True)
class PartitionEstimate:
    layers: tuple[LayerEstimate, ...]
    clock_hz: float
    source: str  # "estimate" (this module's formula) or "NXP converter"

    @property
    def cycles(self) -> int:
        return sum(la.cycles for la in self.layers)

    def to_dict(self) -> dict:
        formula = FORMULA if self.source == "estimate" else "the converter's own per-layer figures"
        return {"source": self.source, "formula": formula, "cycles": self.cycles, "inference_seconds": self.cycles / self.clock_hz,
                "core_clock_hz": self.clock_hz, "macs": sum(la.macs for la in self.layers),
                "layers": [{**asdict(la), "bound": la.bound} for la in self.layers]}


_TYPE_BYTES = {TensorType.INT8: 1, TensorType.UINT8: 1, TensorType.INT16: 2, TensorType.INT32: 4,
               TensorType.FLOAT32: 4, TensorType.INT64: 8}


def _bytes(tensor) -> int:
    return math.prod(int(d) for d in tensor.shape) * _TYPE_BYTES.get(tensor.type, 1)


def estimate_tflite(tflite: bytes, target) -> PartitionEstimate:
    """The estimate of one partition's TFLite for a `NeutronTarget` (see the module docstring)."""
    model = read_model(tflite)
    sg = model.subgraphs[0]

    def constant(i: int) -> bool:
        data = model.buffers[sg.tensors[i].buffer].data
        return data is not None and len(data) > 0

    layers = []
    for op in sg.operators:
        name = op_name(model, op)
        ins = [i for i in op.inputs if i >= 0]
        out = sg.tensors[op.outputs[0]]
        shapes = [tuple(int(d) for d in sg.tensors[i].shape) if i >= 0 else None for i in op.inputs]
        macs = tflite_op_macs(name, shapes, tuple(int(d) for d in out.shape))
        weights = sum(_bytes(sg.tensors[i]) for i in ins if constant(i))
        acts = sum(_bytes(sg.tensors[i]) for i in ins if not constant(i)) + sum(
            _bytes(sg.tensors[o]) for o in op.outputs)
        if name in _FREE:
            compute = data = 0
        else:
            compute = math.ceil(max(macs, math.prod(int(d) for d in out.shape)) / target.macs_per_cycle)
            data = math.ceil(acts / target.activation_bytes_per_cycle + weights / target.weight_bytes_per_cycle)
        layers.append(LayerEstimate(out.name.decode() if isinstance(out.name, bytes) else str(out.name), name,
                                    max(compute, data), macs, compute, data, acts, weights))
    return PartitionEstimate(tuple(layers), target.npu_clock_hz, "estimate")


def from_converter(figures: dict, target) -> PartitionEstimate:
    """NXP's converter's own per-layer figures ({"layers": [{"name", "op", "cycles", "macs"}, ...]})."""
    layers = tuple(LayerEstimate(str(la["name"]), str(la["op"]), int(la["cycles"]), int(la.get("macs", 0)))
                   for la in figures["layers"])
    return PartitionEstimate(layers, float(figures.get("core_clock_hz") or target.npu_clock_hz), "NXP converter")

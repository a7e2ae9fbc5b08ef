"""A per-layer time estimate of Neutron partitions, and of the CPU part of a .pte (NXP publishes no cost model).

Per operator of the partition's int8 TFLite (what the NPU runs, the format transposes included), with the
target's figures (`NeutronTarget`; `estimate_sources` says which are published, derived, fitted or assumed):

    compute cycles = MAC slots / MACs per cycle of the operator's kind:
        conv, pointwise (1x1), fully connected: output positions x round_up(out channels, pipes) x kernel taps
            x round_up(in channels, MACs per pipe), on units x pipes x MACs per pipe (a 3-channel input fills
            3 of a pipe's 8 MACs)
        depthwise: output elements x kernel taps, on units x `depthwise_macs_per_unit` (fitted; it does not spread
            over the pipes: the N3-64's 8 pipes and the N1-16's 2 give the same rate per unit)
        pooling: input elements; elementwise and data movement (add, transpose, pad, softmax, ...): output
            elements; both on units x pipes x MACs per pipe
    data cycles    = activation bytes read and written / activation bytes per cycle
                   + constant bytes (weights, biases) / weight bytes per cycle
    cycles         = max(compute cycles, data cycles) + `layer_cycles` (each kernel's fixed cost, fitted)
    RESHAPE        = 0 cycles                                         (the same bytes under a new shape)

A partition's cycles are the sum of its operators'; the NPU's, the sum of its partitions'; NPU time = cycles / NPU
clock. The CPU part (core/cpu_estimate.py, shared by the back ends): per top-level CPU node (quantize / dequantize at the model's inputs and
outputs, operators the NPU does not run), max(MACs x CPU cycles per MAC, output elements x CPU cycles per element)
at the CPU clock. The total is the sum of both (the NPU and the CPU take turns). The two fitted figures (the depthwise
rate, the cost per kernel) are fitted per Neutron generation on NXP's published latencies of that generation
(`CALIBRATIONS`: N3 on the i.MX RT700, N1 on the MCX N947); the other figures are published, derived or assumed, per
target. benchmarks/neutron_estimate.py fits them and reports each generation's leave-one-out error, the expected
error the report states for the NPU part on that generation's targets (`Calibration.expected_error`); a generation
without published figures (Neutron-S: imx95) has none. Where NXP's converter reports its own figures (the SDK is
installed and the backend stores them under `CONVERTER_KEY` in the lowered module's metadata), `from_converter`
takes those instead.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ai_edge_litert.schema_py_generated import TensorType

from ..tflite.macs import tflite_op_macs
from ..tflite.reader import op_name, read_model

FORMULA = ("per TFLite operator: cycles = max(compute, data) + a fixed cost per kernel; compute = MAC slots / MACs "
           "per cycle of its kind (conv, pointwise, fully connected: channels rounded up to the pipes and to a "
           "pipe's MACs; depthwise: its own MACs per cycle; pooling, elementwise, data movement: one element per "
           "MAC and cycle); data = activation bytes (read + written) / activation bytes per cycle + constant bytes "
           "(weights, biases) / weight bytes per cycle; RESHAPE 0; NPU time = the partitions' cycles / NPU clock; "
           "CPU time (quantize / dequantize at the I/O, CPU operators) = max(MACs x cycles per MAC, elements x "
           "cycles per element) / CPU clock; total = NPU + CPU")


@dataclass(frozen=True)
class Calibration:
    """What the estimate of one Neutron generation is held against: NXP's published latencies on one chip (int8
    inputs and outputs, the whole network on the NPU), which the generation's two fitted figures come from, and the
    expected error of the NPU part: the largest leave-one-out |published / estimate - 1| of that fit (each figure
    predicted by a fit on the others), rounded up to a whole percent. benchmarks/neutron_estimate.py fits, prints
    and checks these figures."""

    generation: str  # NeutronTarget.generation
    chip: str
    source: str
    # (the model the benchmark lowers, the model as NXP names it, seconds compared, the figure as NXP states it)
    published: tuple[tuple[str, str, float, str], ...]
    expected_error: float


CALIBRATIONS: dict[str, Calibration] = {c.generation: c for c in (
    Calibration("N3", "i.MX RT700 (Neutron N3-64, 324 MHz)", "MCUXpresso SDK example readmes", (
        ("zoo.nxp_cifarnet", "CifarNet (ExecuTorch .pte)", 848e-6, "848 us"),
        ("zoo.ds_cnn_s", "DS-CNN-S keyword spotting", 585.5e-6, "576-595 us"),
        ("zoo.mobilenet_v1_025_128", "MobileNetV1 0.25 128x128", 2759e-6, "2,759 us")), 0.11),
    Calibration("N1", "MCX N947 (Neutron N1-16, 150 MHz)", "NXP's eIQ model zoo, MLPerf Tiny on TFLite Micro", (
        ("mlperf_tiny.DSCNNKWS", "DS-CNN keyword spotting", 3.329e-3, "3.329 ms"),
        ("mlperf_tiny.MobileNetV1025", "MobileNetV1 0.25 96x96 visual wake words", 6.384e-3, "6.384 ms"),
        ("mlperf_tiny.ResNet8", "ResNet-8 CIFAR-10", 6.310e-3, "6.310 ms"),
        ("mlperf_tiny.DeepAutoEncoder", "anomaly-detection autoencoder", 0.797e-3, "0.797 ms")), 0.13),
)}


def calibration(target) -> Calibration | None:
    """The published figures and expected error of the target's generation; None where nothing was measured."""
    return CALIBRATIONS.get(getattr(target, "generation", ""))
#: the key of `_delegate_info_meta` under which a backend stores the converter's own per-layer figures
CONVERTER_KEY = "converter_estimate"
_FREE = {"RESHAPE"}
_MAC_ARRAY = {"CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "BATCH_MATMUL"}
_POOLING = {"MAX_POOL_2D", "AVERAGE_POOL_2D", "MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"}


@dataclass(frozen=True)
class LayerEstimate:
    name: str  # the operator's output tensor (as in Vela's per-layer table)
    op: str
    cycles: int
    macs: int
    kind: str = ""  # conv, pointwise, depthwise, fully connected, pooling, elementwise, free
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


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def _compute(name: str, shapes: list, out: tuple[int, ...], macs: int, target) -> tuple[str, float]:
    """(kind, compute cycles) of one operator on the target's MAC array (see the module docstring)."""
    pipes, lane = target.num_pipes, target.num_macs
    filt = shapes[1] if len(shapes) > 1 and shapes[1] else None
    if name == "DEPTHWISE_CONV_2D" and filt:
        positions = math.prod(out[:-1])
        return "depthwise", positions * _round_up(out[-1], pipes) * filt[1] * filt[2] / target.depthwise_macs_per_cycle
    if name == "CONV_2D" and filt:
        slots = math.prod(out[:-1]) * _round_up(filt[0], pipes) * filt[1] * filt[2] * _round_up(filt[3], lane)
        return ("pointwise" if filt[1] == filt[2] == 1 else "conv"), slots / target.macs_per_cycle
    if name == "FULLY_CONNECTED" and filt:
        slots = math.prod(out[:-1]) * _round_up(filt[0], pipes) * _round_up(filt[-1], lane)
        return "fully connected", slots / target.macs_per_cycle
    if name in _MAC_ARRAY:
        return "conv" if name == "TRANSPOSE_CONV" else "fully connected", macs / target.macs_per_cycle
    if name in _POOLING and shapes and shapes[0]:
        return "pooling", math.prod(shapes[0]) / target.macs_per_cycle
    return "elementwise", math.prod(out) / target.macs_per_cycle


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
        out_shape = tuple(int(d) for d in out.shape)
        shapes = [tuple(int(d) for d in sg.tensors[i].shape) if i >= 0 else None for i in op.inputs]
        macs = tflite_op_macs(name, shapes, out_shape)
        weights = sum(_bytes(sg.tensors[i]) for i in ins if constant(i))
        acts = sum(_bytes(sg.tensors[i]) for i in ins if not constant(i)) + sum(
            _bytes(sg.tensors[o]) for o in op.outputs)
        if name in _FREE:
            kind, compute, data, fixed = "free", 0, 0, 0
        else:
            kind, compute = _compute(name, shapes, out_shape, macs, target)
            compute = math.ceil(compute)
            data = math.ceil(acts / target.activation_bytes_per_cycle + weights / target.weight_bytes_per_cycle)
            fixed = round(target.layer_cycles)
        layers.append(LayerEstimate(out.name.decode() if isinstance(out.name, bytes) else str(out.name), name,
                                    max(compute, data) + fixed, macs, kind, compute, data, acts, weights))
    return PartitionEstimate(tuple(layers), target.npu_clock_hz, "estimate")


def from_converter(figures: dict, target) -> PartitionEstimate:
    """NXP's converter's own per-layer figures ({"layers": [{"name", "op", "cycles", "macs"}, ...]})."""
    layers = tuple(LayerEstimate(str(la["name"]), str(la["op"]), int(la["cycles"]), int(la.get("macs", 0)),
                                 str(la.get("kind", "")))
                   for la in figures["layers"])
    return PartitionEstimate(layers, float(figures.get("core_clock_hz") or target.npu_clock_hz), "NXP converter")

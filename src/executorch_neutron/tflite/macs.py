"""Multiply-accumulate counts of TFLite operators, from their physical (NHWC) shapes: the per-layer tables of a
partition's TFLite (the Neutron estimate, neutron/estimate.py) count with these; report/macs.py counts the same
operators on FX graphs."""

from __future__ import annotations

import math


#: the same formulas on a TFLite operator's physical (NHWC) shapes, for per-layer tables of a partition's TFLite
TFLITE_MAC_FORMULA = (
    "CONV_2D: numel(output) * prod(filter.shape[1:]); DEPTHWISE_CONV_2D: numel(output) * kH * kW; "
    "TRANSPOSE_CONV: numel(input) * prod(filter.shape[1:]) (filter [O, kH, kW, I], input its 3rd operand); "
    "FULLY_CONNECTED: numel(output) * in_features; BATCH_MATMUL: numel(output) * K; all other operators: 0"
)


def tflite_op_macs(op: str, inputs: list[tuple[int, ...] | None], output: tuple[int, ...]) -> int:
    """MACs of one TFLite operator `op` ('CONV_2D', ...) from its input shapes (None: absent) and output shape."""
    filt = inputs[1] if len(inputs) > 1 else None
    if op == "CONV_2D" and filt:
        return math.prod(output) * math.prod(filt[1:])
    if op == "DEPTHWISE_CONV_2D" and filt:
        return math.prod(output) * filt[1] * filt[2]
    if op == "TRANSPOSE_CONV" and filt and len(inputs) > 2 and inputs[2]:
        return math.prod(inputs[2]) * math.prod(filt[1:])
    if op == "FULLY_CONNECTED" and filt:
        return math.prod(output) * filt[-1]
    if op == "BATCH_MATMUL" and inputs and inputs[0]:
        return math.prod(output) * inputs[0][-1]
    return 0

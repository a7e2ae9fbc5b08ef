"""Quantization specs that match LiteRT's int8 kernels, as used by the Neutron converter.

One `NeutronQConfig` bundles every spec the pattern annotators need:

- activations: int8 per-tensor affine, [-128, 127], eps 2**-12 (MinMaxObserver, or HistogramObserver on request;
  QAT: FakeQuantize around MovingAverageMinMaxObserver);
- weights of conv/linear: int8 symmetric, [-127, 127], zero point 0, per output channel (PerChannelMinMaxObserver;
  QAT: FakeQuantize around MovingAveragePerChannelMinMaxObserver), or per tensor when `per_channel=False`;
- bias: int32, zero point 0, scale derived as input_scale * weight_scale (per channel when the weights are);
- fixed output qparams of sigmoid/softmax (1/256, -128) and tanh (1/128, 0), which LiteRT's int8 kernels require.

A16W8 (`NeutronQuantizer(activations="int16")`, per layer too) takes the `int16` specs of the same config
(`specs("int16")`): activations int16 symmetric, zero point 0, [-32767, 32767] (LiteRT's 16x8 kernels require zero
point 0; Vela compiles the same TFLite), weights as above, bias int32 in PyTorch (the converter writes it int64, as
TFLite's 16x8 convolution and fully connected kernels take), fixed outputs of sigmoid/tanh/softmax 1/32768, 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch.fx import Node
from torchao.quantization.pt2e import (
    FakeQuantize,
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
)
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    FixedQParamsQuantizationSpec,
    QuantizationSpec,
)

from ..core.qdq import FIXED_QPARAMS_INT16, SIGMOID_SOFTMAX_QPARAMS, TANH_QPARAMS

ACT_QMIN, ACT_QMAX = -128, 127
WEIGHT_QMIN, WEIGHT_QMAX = -127, 127  # symmetric: LiteRT requires weight zero point 0
BIAS_QMIN, BIAS_QMAX = -(2**31), 2**31 - 1
ACT_EPS = 2.0**-12  # smallest activation scale
ACT16_QMIN, ACT16_QMAX = -32767, 32767  # int16 activations: symmetric, zero point 0 (LiteRT's 16x8 kernels)
ACT16_EPS = 2.0**-20  # smallest int16 activation scale (2**-12 / 256: the int8 floor at 256 times the steps)


OBSERVERS = ("minmax", "histogram")


def _fixed(scale: float, zero_point: int, dtype: torch.dtype = torch.int8) -> FixedQParamsQuantizationSpec:
    qmin, qmax = (ACT_QMIN, ACT_QMAX) if dtype == torch.int8 else (ACT16_QMIN, ACT16_QMAX)
    return FixedQParamsQuantizationSpec(
        dtype=dtype,
        scale=scale,
        zero_point=zero_point,
        quant_min=qmin,
        quant_max=qmax,
        qscheme=torch.per_tensor_affine if dtype == torch.int8 else torch.per_tensor_symmetric,
    )


def _derive_bias_qparams(obs_or_fqs: list) -> tuple[torch.Tensor, torch.Tensor]:
    """Bias scale = input activation scale * weight scale (per channel or per tensor), zero point 0."""
    act_scale, _ = obs_or_fqs[0].calculate_qparams()
    weight_scale, _ = obs_or_fqs[1].calculate_qparams()
    scale = (act_scale.to(torch.float64) * weight_scale.to(torch.float64)).to(torch.float32).reshape(-1)
    return scale, torch.zeros_like(scale, dtype=torch.int32)


@dataclass(frozen=True)
class NeutronQConfig:
    """Every quantization spec of one quantizer configuration (built by `make_qconfig`)."""

    is_qat: bool
    per_channel: bool
    activation: QuantizationSpec
    sigmoid_softmax: FixedQParamsQuantizationSpec
    tanh: FixedQParamsQuantizationSpec
    int16: "NeutronQConfig | None" = None  # the same config with int16 activations (A16W8)

    def specs(self, precision: str) -> "NeutronQConfig":
        """The config of a node of `precision` ("int8" or "int16"; the weights are int8 in both)."""
        if precision == "int16":
            return self.int16
        return self

    def weight(self, ch_axis: int = 0, per_channel: bool | None = None) -> QuantizationSpec:
        """Symmetric int8 weight spec; `ch_axis` is the output-channel axis of the weight tensor."""
        per_channel = self.per_channel if per_channel is None else per_channel
        if per_channel:
            observer = MovingAveragePerChannelMinMaxObserver if self.is_qat else PerChannelMinMaxObserver
            qscheme = torch.per_channel_symmetric
            # ch_axis is baked into the constructor too: prepare drops it for FakeQuantize constructors.
            ctr = observer.with_args(ch_axis=ch_axis)
        else:
            observer = MovingAverageMinMaxObserver if self.is_qat else MinMaxObserver
            qscheme = torch.per_tensor_symmetric
            ctr = observer
        if self.is_qat:
            ctr = (
                FakeQuantize.with_args(observer=observer, ch_axis=ch_axis)
                if per_channel
                else FakeQuantize.with_args(observer=observer)
            )
        return QuantizationSpec(
            dtype=torch.int8,
            observer_or_fake_quant_ctr=ctr,
            quant_min=WEIGHT_QMIN,
            quant_max=WEIGHT_QMAX,
            qscheme=qscheme,
            ch_axis=ch_axis if per_channel else None,
        )

    def bias(self, input_edge: tuple[Node, Node], weight_edge: tuple[Node, Node], per_channel: bool | None = None):
        """int32 bias spec derived from the input activation and weight observers of one conv/linear node."""
        per_channel = self.per_channel if per_channel is None else per_channel
        return DerivedQuantizationSpec(
            derived_from=[input_edge, weight_edge],
            derive_qparams_fn=_derive_bias_qparams,
            dtype=torch.int32,
            quant_min=BIAS_QMIN,
            quant_max=BIAS_QMAX,
            qscheme=torch.per_channel_symmetric if per_channel else torch.per_tensor_symmetric,
            ch_axis=0 if per_channel else None,
        )


def _activation_ctr(is_qat: bool, observer: str, eps: float = ACT_EPS, **kw) -> Callable:
    if observer not in OBSERVERS:
        raise ValueError(f"unknown observer {observer!r}: valid observers are {', '.join(OBSERVERS)}")
    if is_qat:
        return FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, eps=eps, **kw)
    if observer == "histogram":
        return HistogramObserver.with_args(eps=eps, **kw)
    return MinMaxObserver.with_args(eps=eps, **kw)


def make_qconfig(is_qat: bool = False, per_channel: bool = True, observer: str = "minmax") -> NeutronQConfig:
    """Build the specs for PTQ (`observer` = "minmax" or "histogram") or QAT (fake quantization)."""
    activation = QuantizationSpec(
        dtype=torch.int8,
        observer_or_fake_quant_ctr=_activation_ctr(is_qat, observer),
        quant_min=ACT_QMIN,
        quant_max=ACT_QMAX,
        qscheme=torch.per_tensor_affine,
    )
    # int16: symmetric (zero point 0) over [-32767, 32767]; the observer is told, so its scale is max|x| / 32767
    symmetric = dict(dtype=torch.int16, quant_min=ACT16_QMIN, quant_max=ACT16_QMAX, qscheme=torch.per_tensor_symmetric)
    activation16 = QuantizationSpec(observer_or_fake_quant_ctr=_activation_ctr(is_qat, observer, ACT16_EPS,
                                                                                **symmetric), **symmetric)
    int16 = NeutronQConfig(
        is_qat=is_qat,
        per_channel=per_channel,
        activation=activation16,
        sigmoid_softmax=_fixed(*FIXED_QPARAMS_INT16, torch.int16),
        tanh=_fixed(*FIXED_QPARAMS_INT16, torch.int16),
    )
    return NeutronQConfig(
        is_qat=is_qat,
        per_channel=per_channel,
        activation=activation,
        sigmoid_softmax=_fixed(*SIGMOID_SOFTMAX_QPARAMS),
        tanh=_fixed(*TANH_QPARAMS),
        int16=int16,
    )

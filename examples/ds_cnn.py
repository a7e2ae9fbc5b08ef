"""Keyword spotting: a DS-CNN in the style of MLPerf Tiny's KWS reference (input 1x1x49x10 MFCC features).

    python examples/ds_cnn.py                          # lower, print the report, run the .pte on the host
    executorch-neutron compile examples/ds_cnn.py:factory --random-calibration -o out/ds_cnn.pte

A 10x4 stride-2 convolution to 64 channels, four depthwise-separable blocks (3x3 depthwise + 1x1 pointwise,
batch norm and ReLU each), global average pooling and a 12-way classifier (the KWS label set). 64 channels keep
every layer a multiple of the NPU's 8-MAC channel alignment.
"""

import torch
from torch import nn

from executorch_neutron.models.zoo import warm_up_batch_norm


def _conv_bn_relu(cin, cout, kernel, stride=1, padding=0, groups=1):
    return [nn.Conv2d(cin, cout, kernel, stride, padding, groups=groups, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class DSCNN(nn.Module):
    def __init__(self, channels: int = 64, blocks: int = 4, classes: int = 12):
        super().__init__()
        layers = _conv_bn_relu(1, channels, (10, 4), stride=2, padding=(5, 1))
        for _ in range(blocks):
            layers += _conv_bn_relu(channels, channels, 3, padding=1, groups=channels)  # depthwise
            layers += _conv_bn_relu(channels, channels, 1)  # pointwise
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(channels, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def factory(seed: int = 0):
    """(module, example_inputs) for `executorch-neutron compile examples/ds_cnn.py:factory`."""
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 1, 49, 10),)
    return warm_up_batch_norm(DSCNN(), inputs), inputs


if __name__ == "__main__":
    from _common import run_example

    raise SystemExit(run_example("ds_cnn", factory))

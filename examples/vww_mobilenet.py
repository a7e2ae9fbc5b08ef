"""Visual wake words: a MobileNetV1-0.25-style person detector (input 1x3x96x96, 2 classes), as in MLPerf Tiny.

    python examples/vww_mobilenet.py
    executorch-neutron compile examples/vww_mobilenet.py:factory --random-calibration -o out/vww.pte

MobileNetV1 with width multiplier 0.25: a 3x3 stride-2 stem to 8 channels, then 13 depthwise-separable blocks
(8 -> 16 -> 32 -> 64 -> 128 -> 256 channels, all multiples of 8), global average pooling, a 2-way classifier.
"""

import torch
from torch import nn

from executorch_neutron.models.zoo import warm_up_batch_norm

# (output channels, stride) of the 13 depthwise-separable blocks of MobileNetV1, before the width multiplier
BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]


def _conv_bn_relu(cin, cout, kernel, stride=1, groups=1):
    return [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU()]


class MobileNetV1(nn.Module):
    def __init__(self, alpha: float = 0.25, classes: int = 2):
        super().__init__()
        cin = int(32 * alpha)
        layers = _conv_bn_relu(3, cin, 3, stride=2)
        for cout, stride in BLOCKS:
            cout = int(cout * alpha)
            layers += _conv_bn_relu(cin, cin, 3, stride, groups=cin) + _conv_bn_relu(cin, cout, 1)
            cin = cout
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(cin, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def factory(seed: int = 0):
    """(module, example_inputs) for `executorch-neutron compile examples/vww_mobilenet.py:factory`."""
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, 96, 96),)
    return warm_up_batch_norm(MobileNetV1(), inputs), inputs


if __name__ == "__main__":
    from _common import run_example

    raise SystemExit(run_example("vww_mobilenet", factory))

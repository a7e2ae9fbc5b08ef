"""Example networks bundled with the package (no torchvision): used by the demo, examples, tests, benchmarks.

Each factory returns `(module, example_inputs)`; `calibration(inputs, n)` makes calibration batches.
Batch-norm layers get realistic running statistics via `warm_up_batch_norm` (a few train-mode batches),
otherwise freshly initialised BN folds into identity scales and activations collapse.
"""

from __future__ import annotations

import torch
from torch import nn


def warm_up_batch_norm(model: nn.Module, inputs: tuple, batches: int = 4, seed: int = 0) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(*[torch.randn(x.shape, generator=g) for x in inputs])
    return model.eval()


def calibration(inputs: tuple, n: int = 8, seed: int = 1) -> list[tuple]:
    g = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(x.shape, generator=g) for x in inputs) for _ in range(n)]


def _conv_bn(cin, cout, k=3, stride=1, groups=1, act=nn.ReLU6):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class CifarNet(nn.Module):
    """CifarNet-style CNN: 32x32x3 -> conv/relu/maxpool x3 -> fc -> 10 logits."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        )
        self.classifier = nn.Linear(64 * 4 * 4, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        layers = [] if expand == 1 else [_conv_bn(cin, hidden, 1)]
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), _conv_bn(hidden, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class MobileNetV2Like(nn.Module):
    """A reduced MobileNetV2: inverted residuals, depthwise conv, relu6, residual adds, GAP, classifier."""

    def __init__(self, num_classes: int = 16, width: int = 16):
        super().__init__()
        cfg = [(1, width, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2), (6, 64, 2, 2)]  # expand, out, repeats, stride
        layers = [_conv_bn(3, width, 3, 2)]
        cin = width
        for expand, cout, repeats, stride in cfg:
            for i in range(repeats):
                layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expand))
                cin = cout
        layers.append(_conv_bn(cin, 128, 1))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(128, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class AnomalyAutoencoder(nn.Module):
    """MLPerf Tiny's anomaly-detection autoencoder (ToyADMOS): 640 log-mel features -> 4 x (dense 128, batch norm,
    ReLU) -> dense 8 bottleneck (batch norm, ReLU) -> 4 x (dense 128, batch norm, ReLU) -> dense 640."""

    def __init__(self, features: int = 640, hidden: int = 128, bottleneck: int = 8):
        super().__init__()
        widths = [features] + [hidden] * 4 + [bottleneck] + [hidden] * 4
        layers = []
        for cin, cout in zip(widths, widths[1:]):
            layers += [nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU()]
        self.body = nn.Sequential(*layers, nn.Linear(hidden, features))

    def forward(self, x):
        return self.body(x)


def anomaly_autoencoder(seed: int = 0):
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 640),)
    model = AnomalyAutoencoder()
    return warm_up_batch_norm(model, (torch.randn(8, 640),)), inputs


def cifarnet(seed: int = 0):
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, 32, 32),)
    return CifarNet().eval(), inputs


def mobilenet_v2_like(seed: int = 0, resolution: int = 64):
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, resolution, resolution),)
    return warm_up_batch_norm(MobileNetV2Like(), inputs), inputs


MODELS = {"cifarnet": cifarnet, "mobilenet_v2_like": mobilenet_v2_like, "anomaly_autoencoder": anomaly_autoencoder}

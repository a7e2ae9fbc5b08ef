"""Example networks bundled with the package (no torchvision): used by the demo, examples, tests, benchmarks.

Each factory returns `(module, example_inputs)`; `calibration(inputs, n)` makes calibration batches.
Batch-norm layers get realistic running statistics via `warm_up_batch_norm` (a few train-mode batches),
otherwise freshly initialised BN folds into identity scales and activations collapse.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
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


class NxpCifarNet(nn.Module):
    """NXP's CifarNet as ExecuTorch's examples/nxp/experimental/cifar_net defines it (the model of NXP's published
    i.MX RT700 figure): three 5x5 convolutions (3 -> 32 -> 32 -> 64) each on an input padded by 2, no activation;
    2x2 / stride-2 max pooling after the first two, a 1x1 / stride-2 max pooling after the third; reshape to 1024,
    a linear layer to 10 classes, softmax."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2, self.conv3 = nn.Conv2d(3, 32, 5), nn.Conv2d(32, 32, 5), nn.Conv2d(32, 64, 5)
        self.pool1, self.pool2 = nn.MaxPool2d(2, 2), nn.MaxPool2d(1, 2)
        self.fc = nn.Linear(1024, 10)

    def forward(self, x):
        x = self.pool1(self.conv1(F.pad(x, (2, 2, 2, 2))))
        x = self.pool1(self.conv2(F.pad(x, (2, 2, 2, 2))))
        x = self.pool2(self.conv3(F.pad(x, (2, 2, 2, 2))))
        return self.fc(torch.reshape(x, (-1, 1024))).softmax(1)


def _separable(cin, cout, stride=1, act=nn.ReLU):
    """A depthwise-separable block: 3x3 depthwise + BN + activation, 1x1 pointwise + BN + activation."""
    return [_conv_bn(cin, cin, 3, stride, groups=cin, act=act), _conv_bn(cin, cout, 1, act=act)]


class DsCnnS(nn.Module):
    """MLPerf Tiny's keyword-spotting reference DS-CNN-S (mlcommons/tiny; ExecuTorch's port in
    examples/models/mlperf_tiny): 49x10 MFCC input, a 10x4 stride-2 convolution to 64 channels (padding 5, 1),
    four depthwise-separable blocks of 64 channels, a 24x5 average pooling, a linear layer to 12 classes."""

    def __init__(self, classes: int = 12):
        super().__init__()
        stem = nn.Sequential(nn.Conv2d(1, 64, (10, 4), 2, (5, 1), bias=False), nn.BatchNorm2d(64), nn.ReLU())
        self.features = nn.Sequential(stem, *[m for _ in range(4) for m in _separable(64, 64)])
        self.pool = nn.AvgPool2d((24, 5))
        self.classifier = nn.Linear(64, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


#: MobileNetV1's 13 depthwise-separable blocks: (output channels before the width multiplier, stride)
MOBILENET_V1_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)) + ((512, 1),) * 5 + (
    (1024, 2), (1024, 1))


class MobileNetV1(nn.Module):
    """MobileNetV1 (ReLU6, as TensorFlow's reference): a 3x3 stride-2 stem, 13 depthwise-separable blocks, global
    average pooling, a linear classifier and softmax; `alpha` is the width multiplier."""

    def __init__(self, alpha: float = 0.25, classes: int = 1000):
        super().__init__()
        cin = int(32 * alpha)
        layers = [_conv_bn(3, cin, 3, 2)]
        for cout, stride in MOBILENET_V1_BLOCKS:
            layers += _separable(cin, int(cout * alpha), stride, nn.ReLU6)
            cin = int(cout * alpha)
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(cin, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1)).softmax(1)


def anomaly_autoencoder(seed: int = 0):
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 640),)
    model = AnomalyAutoencoder()
    return warm_up_batch_norm(model, (torch.randn(8, 640),)), inputs


def cifarnet(seed: int = 0):
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, 32, 32),)
    return CifarNet().eval(), inputs


def nxp_cifarnet(seed: int = 0):
    """NXP's CifarNet (random weights), input 1x3x32x32: the model of NXP's published i.MX RT700 latency."""
    torch.manual_seed(seed)
    return NxpCifarNet().eval(), (torch.randn(1, 3, 32, 32),)


def ds_cnn_s(seed: int = 0):
    """MLPerf Tiny's DS-CNN-S keyword spotter (random weights), input 1x1x49x10."""
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 1, 49, 10),)
    return warm_up_batch_norm(DsCnnS(), inputs), inputs


def mobilenet_v1_025_128(seed: int = 0):
    """MobileNetV1 0.25 at 128x128x3 with 1000 classes (random weights), as TensorFlow's mobilenet_v1_0.25_128."""
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, 128, 128),)
    return warm_up_batch_norm(MobileNetV1(0.25, 1000), inputs), inputs


def mobilenet_v2_like(seed: int = 0, resolution: int = 64):
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, resolution, resolution),)
    return warm_up_batch_norm(MobileNetV2Like(), inputs), inputs


MODELS = {"cifarnet": cifarnet, "mobilenet_v2_like": mobilenet_v2_like, "anomaly_autoencoder": anomaly_autoencoder,
          "nxp_cifarnet": nxp_cifarnet, "ds_cnn_s": ds_cnn_s, "mobilenet_v1_025_128": mobilenet_v1_025_128}

"""Small models built from the defining blocks of the architectures people deploy (no torchvision, no downloads).

Each factory returns `(module, example_inputs)` with random weights and batch-norm statistics warmed up
(`zoo.warm_up_batch_norm`), small enough to lower in seconds:

- `mobilenet_v3`: inverted residual with squeeze-excite (hardsigmoid gate) and hardswish;
- `efficientnet`: MBConv with SiLU and a sigmoid squeeze-excite;
- `shufflenet_v2`: ShuffleNetV2 units (split / branch / cat, channel shuffle view -> transpose -> contiguous -> view);
- `resnext`: ResNeXt / RegNet grouped bottleneck (groups neither 1 nor channels) with a residual add;
- `resnet_stem`: ResNet stem conv 7x7 s2 + BN + ReLU + max_pool2d(3, 2, 1) and one basic block;
- `squeezenet`: Fire modules with ceil_mode max pooling;
- `regnetx_002` (not in FAMILIES): timm's regnetx_002 layout, for benchmarks/grouped_conv_lowering.py.

Used by tests/models/test_arch_families.py and benchmarks/model_zoo.py.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron.models.zoo import warm_up_batch_norm


def conv_bn(cin, cout, k=1, stride=1, groups=1, act=None):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, c, squeeze, gate):
        super().__init__()
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.gate = gate()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = self.fc2(F.relu(self.fc1(s)))
        return x * self.gate(s)


class V3Block(nn.Module):
    """MobileNetV3 inverted residual: expand (hardswish), depthwise, squeeze-excite (hardsigmoid), project."""

    def __init__(self, cin, hidden, cout, stride):
        super().__init__()
        self.expand = conv_bn(cin, hidden, 1, act=nn.Hardswish)
        self.dw = conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.Hardswish)
        self.se = SqueezeExcite(hidden, 8, nn.Hardsigmoid)
        self.project = conv_bn(hidden, cout, 1)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.residual else y


class MobileNetV3Like(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2, act=nn.Hardswish)
        self.blocks = nn.Sequential(V3Block(16, 32, 16, 1), V3Block(16, 48, 24, 2), V3Block(24, 64, 24, 1))
        self.head = nn.Linear(24, 10)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


class MBConv(nn.Module):
    """EfficientNet MBConv: expand (SiLU), depthwise (SiLU), squeeze-excite (sigmoid), project."""

    def __init__(self, cin, hidden, cout, stride):
        super().__init__()
        self.expand = conv_bn(cin, hidden, 1, act=nn.SiLU)
        self.dw = conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.SiLU)
        self.se = SqueezeExcite(hidden, 8, nn.Sigmoid)
        self.project = conv_bn(hidden, cout, 1)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.residual else y


class EfficientNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2, act=nn.SiLU)
        self.blocks = nn.Sequential(MBConv(16, 32, 16, 1), MBConv(16, 48, 24, 2))
        self.head = nn.Linear(24, 10)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


def channel_shuffle(x, groups: int):
    n, c, h, w = x.shape
    x = x.view(n, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(n, c, h, w)


class ShuffleUnit(nn.Module):
    """ShuffleNetV2 unit, stride 1: split channels, transform one half, concatenate, shuffle."""

    def __init__(self, c):
        super().__init__()
        half = c // 2
        self.branch = nn.Sequential(conv_bn(half, half, 1, act=nn.ReLU), conv_bn(half, half, 3, groups=half),
                                    conv_bn(half, half, 1, act=nn.ReLU))

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return channel_shuffle(torch.cat((a, self.branch(b)), 1), 2)


class ShuffleNetV2Like(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 32, 3, 2, act=nn.ReLU)
        self.units = nn.Sequential(ShuffleUnit(32), ShuffleUnit(32))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.units(self.stem(x)), 1), 1))


class GroupedBottleneck(nn.Module):
    """ResNeXt / RegNetX bottleneck: 1x1, 3x3 grouped (groups neither 1 nor channels), 1x1, residual add."""

    def __init__(self, c, width, groups, stride=1):
        super().__init__()
        self.a = conv_bn(c, width, 1, act=nn.ReLU)
        self.b = conv_bn(width, width, 3, stride, groups=groups, act=nn.ReLU)
        self.c = conv_bn(width, c, 1)

    def forward(self, x):
        return F.relu(x + self.c(self.b(self.a(x))))


class ResNeXtLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 32, 3, 2, act=nn.ReLU)
        self.blocks = nn.Sequential(GroupedBottleneck(32, 32, 4), GroupedBottleneck(32, 64, 8))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


class RegNetXBlock(nn.Module):
    """RegNetX block: 1x1, 3x3 grouped (group width 8) with the stage's stride, 1x1; projected shortcut when the
    shape changes."""

    def __init__(self, cin, cout, stride, group_width=8):
        super().__init__()
        self.a = conv_bn(cin, cout, 1, act=nn.ReLU)
        self.b = conv_bn(cout, cout, 3, stride, groups=cout // group_width, act=nn.ReLU)
        self.c = conv_bn(cout, cout, 1)
        self.shortcut = conv_bn(cin, cout, 1, stride) if (stride, cin) != (1, cout) else nn.Identity()

    def forward(self, x):
        return F.relu(self.shortcut(x) + self.c(self.b(self.a(x))))


class RegNetX002Like(nn.Module):
    """timm's regnetx_002 layout (RegNetX-200MF): stem 32, stages of widths 24, 56, 152, 368 and depths 1, 1, 4, 7,
    group width 8: 2 to 46 groups per 3x3 conv."""

    def __init__(self, widths=(24, 56, 152, 368), depths=(1, 1, 4, 7), classes=1000):
        super().__init__()
        self.stem = conv_bn(3, 32, 3, 2, act=nn.ReLU)
        blocks, cin = [], 32
        for w, d in zip(widths, depths):
            for i in range(d):
                blocks.append(RegNetXBlock(cin, w, 2 if i == 0 else 1))
                cin = w
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


class BasicBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = conv_bn(c, c, 3, act=nn.ReLU)
        self.b = conv_bn(c, c, 3)

    def forward(self, x):
        return F.relu(x + self.b(self.a(x)))


class ResNetStemLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.block = BasicBlock(16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.block(self.stem(x)), 1), 1))


class Fire(nn.Module):
    """SqueezeNet Fire module: squeeze 1x1, expand 1x1 and 3x3, concatenated."""

    def __init__(self, cin, squeeze, expand):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.e1 = nn.Conv2d(squeeze, expand, 1)
        self.e3 = nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x):
        s = F.relu(self.squeeze(x))
        return torch.cat((F.relu(self.e1(s)), F.relu(self.e3(s))), 1)


class SqueezeNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(32, 8, 16), Fire(32, 8, 16), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(32, 16, 24))
        self.classifier = nn.Sequential(nn.Conv2d(48, 16, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def _make(cls, resolution: int, seed: int):
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, resolution, resolution),)
    return warm_up_batch_norm(cls(), inputs), inputs


def mobilenet_v3(seed: int = 0):
    return _make(MobileNetV3Like, 48, seed)


def efficientnet(seed: int = 0):
    return _make(EfficientNetLike, 48, seed)


def shufflenet_v2(seed: int = 0):
    return _make(ShuffleNetV2Like, 48, seed)


def resnext(seed: int = 0):
    return _make(ResNeXtLike, 40, seed)


def resnet_stem(seed: int = 0):
    return _make(ResNetStemLike, 48, seed)


def squeezenet(seed: int = 0):
    # 50: the ceil_mode pools see even sizes (24 -> 12, 12 -> 6), where ceil_mode adds a window at the edge
    return _make(SqueezeNetLike, 50, seed)


def regnetx_002(seed: int = 0, resolution: int = 224):
    """A regnetx_002-sized model (not in FAMILIES: it is for the lowering-time benchmark)."""
    return _make(RegNetX002Like, resolution, seed)


FAMILIES = {
    "mobilenet_v3": mobilenet_v3,
    "efficientnet": efficientnet,
    "shufflenet_v2": shufflenet_v2,
    "resnext": resnext,
    "resnet_stem": resnet_stem,
    "squeezenet": squeezenet,
}

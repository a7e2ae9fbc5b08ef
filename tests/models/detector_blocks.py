"""A small one-stage detector in the style of YOLOv8 / YOLO11 in export mode, written from its blocks (no detection
package): Conv-BN-SiLU, C2f (split, bottlenecks, concat), SPPF (three chained 5x5 max pools), a feature pyramid
with nearest 2x upsampling and concatenation, and a Detect head whose box branch decodes a distribution over
`reg_max` bins (DFL: softmax over the bins, then a 1x1 convolution with the fixed weights 0..reg_max-1).

As the export mode of that package does, the head computes its anchor grid and strides in `forward()` from the
feature maps' shapes: `arange` per axis, `meshgrid`, `stack`, `full` with each level's stride read back from a
buffer (`.item()`, a `_local_scalar_dense` in the exported graph), then `cat`. All of it depends only on shapes
known at export, so the lowering must fold it into constants.

`detector(width=0.25, resolution=96)`: YOLOv8n's channel plan (16, 32, 64, 128, 256 at width 0.25), one
bottleneck per C2f, 8 classes; output (1, 4 + classes, anchors): box centre and size in input pixels, then
class probabilities.
"""

from __future__ import annotations

import torch
from torch import nn

from executorch_neutron.models.zoo import warm_up_batch_norm


class Conv(nn.Module):
    """Conv2d (no bias) -> BatchNorm -> SiLU, 'same' padding."""

    def __init__(self, cin, cout, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1, self.cv2 = Conv(c, c, 3), Conv(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """1x1 conv to 2c, split in halves, n bottlenecks on the second half, concat of all, 1x1 conv."""

    def __init__(self, cin, cout, n=1, shortcut=False):
        super().__init__()
        self.c = cout // 2
        self.cv1 = Conv(cin, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, cout, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout, k=5):
        super().__init__()
        self.cv1, self.cv2 = Conv(cin, cin // 2, 1), Conv(cin // 2 * 4, cout, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))


class DFL(nn.Module):
    """The expected value of a distribution over `bins` bins: softmax, then a 1x1 conv with weights 0..bins-1."""

    def __init__(self, bins=16):
        super().__init__()
        self.bins = bins
        self.conv = nn.Conv2d(bins, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(bins, dtype=torch.float).view(1, bins, 1, 1)

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.bins, a).transpose(2, 1).softmax(1)).view(b, 4, a)


def make_anchors(feats, strides, offset=0.5):
    """Anchor centres (in grid cells) and per-anchor strides from the feature maps' shapes, as the head's export
    mode computes them in forward()."""
    points, stride_list = [], []
    for f, stride in zip(feats, strides):
        _, _, h, w = f.shape
        sx = torch.arange(end=w, dtype=f.dtype) + offset
        sy = torch.arange(end=h, dtype=f.dtype) + offset
        sy, sx = torch.meshgrid(sy, sx, indexing="ij")
        points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_list.append(torch.full((h * w, 1), stride.item(), dtype=f.dtype))
    return torch.cat(points), torch.cat(stride_list)


class Detect(nn.Module):
    def __init__(self, classes, channels, reg_max=16):
        super().__init__()
        self.nc, self.reg_max, self.no = classes, reg_max, classes + 4 * reg_max
        self.register_buffer("stride", torch.tensor([8.0, 16.0, 32.0]))
        c2, c3 = max(16, channels[0] // 4, reg_max * 4), max(channels[0], min(classes, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(c, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1))
                                 for c in channels)
        self.cv3 = nn.ModuleList(nn.Sequential(Conv(c, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, classes, 1))
                                 for c in channels)
        self.dfl = DFL(reg_max)

    def forward(self, xs):
        xs = [torch.cat((b(x), c(x)), 1) for x, b, c in zip(xs, self.cv2, self.cv3)]
        anchors, strides = (t.transpose(0, 1) for t in make_anchors(xs, self.stride))
        flat = torch.cat([x.view(x.shape[0], self.no, -1) for x in xs], 2)
        box, cls = flat.split((4 * self.reg_max, self.nc), 1)
        lt, rb = self.dfl(box).chunk(2, 1)
        x1y1, x2y2 = anchors.unsqueeze(0) - lt, anchors.unsqueeze(0) + rb
        boxes = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
        return torch.cat((boxes, cls.sigmoid()), 1)


class Detector(nn.Module):
    """Backbone (strides 2..32, C2f stages, SPPF), PAN neck (upsample + concat both ways), Detect on P3-P5."""

    def __init__(self, width=0.25, classes=8):
        super().__init__()
        c = [int(x * width) for x in (64, 128, 256, 512, 1024)]
        self.b0, self.b1, self.b2 = Conv(3, c[0], 3, 2), Conv(c[0], c[1], 3, 2), C2f(c[1], c[1], shortcut=True)
        self.b3, self.b4 = Conv(c[1], c[2], 3, 2), C2f(c[2], c[2], shortcut=True)
        self.b5, self.b6 = Conv(c[2], c[3], 3, 2), C2f(c[3], c[3], shortcut=True)
        self.b7, self.b8, self.b9 = Conv(c[3], c[4], 3, 2), C2f(c[4], c[4], shortcut=True), SPPF(c[4], c[4])
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h12, self.h15 = C2f(c[4] + c[3], c[3]), C2f(c[3] + c[2], c[2])
        self.h16, self.h18 = Conv(c[2], c[2], 3, 2), C2f(c[2] + c[3], c[3])
        self.h19, self.h21 = Conv(c[3], c[3], 3, 2), C2f(c[3] + c[4], c[4])
        self.detect = Detect(classes, (c[2], c[3], c[4]))

    def forward(self, x):
        p3 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        n4 = self.h12(torch.cat((self.up(p5), p4), 1))
        n3 = self.h15(torch.cat((self.up(n4), p3), 1))
        m4 = self.h18(torch.cat((self.h16(n3), n4), 1))
        m5 = self.h21(torch.cat((self.h19(m4), p5), 1))
        return self.detect([n3, m4, m5])


def detector(seed: int = 0, width: float = 0.25, resolution: int = 96, classes: int = 8):
    """(module, example_inputs): the detector with random weights and warmed-up batch-norm statistics."""
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, resolution, resolution),)
    return warm_up_batch_norm(Detector(width, classes), inputs), inputs

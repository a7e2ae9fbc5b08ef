"""The detection head of the YOLOv8 / YOLO11 family as its package writes it in export mode, reconstructed from the
facts of its behaviour (no detection package is imported or copied; that package is AGPL):

- the anchors are recomputed in every `forward()` from the feature maps: per level,
  `sx = torch.arange(w).type_as(feats[0]) + 0.5` (and `sy` from h), `torch.meshgrid(sy, sx, indexing="ij")`,
  `torch.stack((sx, sy), -1).view(-1, 2)`, and a stride column `feats[0].new_full((h * w, 1), stride[i],
  dtype=feats[0].dtype)` with `stride[i]` a 0-d tensor indexed from a float buffer of one value per level;
- anchors and stride columns are concatenated over the levels and transposed, and the boxes are
  `dist2bbox(dfl(box), anchors.unsqueeze(0)) * strides` (DFL: softmax over 16 bins, then a 1x1 convolution with the
  fixed weights 0..15; dist2bbox chunks, subtracts, adds, halves and concatenates);
- the head assigns `self.anchors` and `self.strides` as plain attributes during `forward()`.

`type_as` and `new_full` take a run-time feature map, of which only the dtype matters: the whole grid depends on
static shapes and the stride buffer alone. Variants (`HeadSpec`) write the same grid the other ways a user may:
xy indexing, the stride as a buffer, as a 0-d tensor attribute, or as Python floats, with two or three levels.

`yolo_detector(spec, resolution)`: a small convolutional backbone producing the levels' feature maps (strides
8, 16, 32 of the input), then this head; output (1, 4 + classes, anchors).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from executorch_neutron.models.zoo import warm_up_batch_norm

from models.detector_blocks import DFL, Conv


@dataclass(frozen=True)
class HeadSpec:
    """How the head writes its grid: `indexing` of meshgrid ("ij" as the package, or "xy"), where the strides live
    ("buffer": a float buffer indexed per level, as the package; "tensor": a list of 0-d tensors kept as a plain
    attribute; "float": Python floats), and the number of levels (2: strides 8 and 16; 3: 8, 16 and 32)."""

    indexing: str = "ij"
    stride: str = "buffer"
    levels: int = 3
    #: Conv-BN-SiLU layers before each branch's last 1x1 convolution: 2 as the package's head, 0 for a cheap test
    branch_depth: int = 2


def make_anchors(feats, strides, indexing="ij", offset=0.5):
    """Anchor centres (grid cells) and per-anchor stride columns of every level, from the feature maps."""
    anchor_points, stride_tensor = [], []
    for i, f in enumerate(feats):
        _, _, h, w = f.shape
        sx = torch.arange(w).type_as(feats[0]) + offset
        sy = torch.arange(h).type_as(feats[0]) + offset
        if indexing == "ij":
            sy, sx = torch.meshgrid(sy, sx, indexing="ij")
        else:  # xy: the same grid, the first output varying along the columns
            sx, sy = torch.meshgrid(sx, sy, indexing="xy")
        anchor_points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_tensor.append(feats[0].new_full((h * w, 1), strides[i], dtype=feats[0].dtype))
    return torch.cat(anchor_points), torch.cat(stride_tensor)


def dist2bbox(distance, anchor_points, dim=1):
    """Box centre and size from the distances of its sides to the anchor point."""
    lt, rb = distance.chunk(2, dim)
    x1y1 = anchor_points - lt
    x2y2 = anchor_points + rb
    return torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), dim)


def _branch(cin: int, width: int, cout: int, depth: int) -> nn.Sequential:
    """`depth` 3x3 Conv-BN-SiLU layers of `width` channels, then a 1x1 convolution to `cout`."""
    layers = [Conv(cin if i == 0 else width, width, 3) for i in range(depth)]
    return nn.Sequential(*layers, nn.Conv2d(width if depth else cin, cout, 1))


class Head(nn.Module):
    """Per level a box branch (4 x reg_max) and a class branch, concatenated; the export-mode decode."""

    def __init__(self, spec: HeadSpec, classes: int, channels, reg_max: int = 16):
        super().__init__()
        self.spec, self.nc, self.reg_max, self.no = spec, classes, reg_max, classes + 4 * reg_max
        values = (8.0, 16.0, 32.0)[:spec.levels]
        if spec.stride == "buffer":
            self.register_buffer("stride", torch.tensor(values))
        elif spec.stride == "tensor":
            self.stride = [torch.tensor(v) for v in values]
        else:
            self.stride = list(values)
        c2, c3 = max(16, channels[0] // 4, reg_max * 4), max(channels[0], min(classes, 100))
        self.cv2 = nn.ModuleList(_branch(c, c2, 4 * reg_max, spec.branch_depth) for c in channels)
        self.cv3 = nn.ModuleList(_branch(c, c3, classes, spec.branch_depth) for c in channels)
        self.dfl = DFL(reg_max)

    def forward(self, x):
        x = [torch.cat((b(xi), c(xi)), 1) for xi, b, c in zip(x, self.cv2, self.cv3)]
        shape = x[0].shape
        x_cat = torch.cat([xi.view(shape[0], self.no, -1) for xi in x], 2)
        self.anchors, self.strides = (t.transpose(0, 1) for t in make_anchors(x, self.stride, self.spec.indexing))
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        dbox = dist2bbox(self.dfl(box), self.anchors.unsqueeze(0)) * self.strides
        return torch.cat((dbox, cls.sigmoid()), 1)


class Backbone(nn.Module):
    """Strided Conv-BN-SiLU stages: feature maps at strides 8, 16 (and 32) of the input."""

    def __init__(self, widths=(8, 16, 32, 32, 64)):
        super().__init__()
        c = widths
        self.stem = nn.Sequential(Conv(3, c[0], 3, 2), Conv(c[0], c[1], 3, 2), Conv(c[1], c[2], 3, 2))
        self.down4, self.down5 = Conv(c[2], c[3], 3, 2), Conv(c[3], c[4], 3, 2)
        self.channels = (c[2], c[3], c[4])

    def forward(self, x):
        p3 = self.stem(x)
        p4 = self.down4(p3)
        return [p3, p4, self.down5(p4)]


class YoloDetector(nn.Module):
    def __init__(self, spec: HeadSpec, classes: int = 8):
        super().__init__()
        self.levels = spec.levels
        self.backbone = Backbone()
        self.head = Head(spec, classes, self.backbone.channels[:spec.levels])

    def forward(self, x):
        return self.head(self.backbone(x)[:self.levels])


def yolo_detector(spec: HeadSpec = HeadSpec(), resolution: int = 64, seed: int = 0, classes: int = 8):
    """(module, example_inputs): the detector with random weights and warmed-up batch-norm statistics."""
    torch.manual_seed(seed)
    inputs = (torch.randn(1, 3, resolution, resolution),)
    return warm_up_batch_norm(YoloDetector(spec, classes), inputs), inputs

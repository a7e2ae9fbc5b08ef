"""Models as other back ends' test suites write them (Arm's Ethos-U tests, NXP's Neutron tests, torchvision's
definitions), written here from their defining blocks: MobileNetV1-0.25 for visual wake words at 96x96 (MLPerf
Tiny), MobileNetV3-small (inverted residuals with squeeze-excitation and hardswish), a mean over dims + linear
head, attention (nn.Transformer at batch 1, a cross-attention), a Conv3d, DeepLabV3's ASPP image-pooling branch,
verification heads (cosine similarity and the L2 distance of two embeddings, as re-identification and face
verification suites write them) and a thresholded feature map normalized by its own channel sum.
Random weights with batch norms warmed up (`zoo.warm_up_batch_norm`), as those suites do. Each entry:
name -> () -> (module in eval mode, example inputs)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron.models.zoo import warm_up_batch_norm


def _cbr(cin, cout, k, s=1, groups=1, act=nn.ReLU):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout), act())


class MobileNetV1(nn.Module):
    """MobileNetV1 with width 0.25 (MLPerf Tiny's visual wake words network, 2 classes)."""

    BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]

    def __init__(self, alpha=0.25, classes=2):
        super().__init__()
        cin = int(32 * alpha)
        layers = [_cbr(3, cin, 3, 2)]
        for cout, s in self.BLOCKS:
            cout = int(cout * alpha)
            layers += [_cbr(cin, cin, 3, s, groups=cin), _cbr(cin, cout, 1)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


class SqueezeExcite(nn.Module):
    def __init__(self, c, squeeze):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, k, expand, cout, se, act, s):
        super().__init__()
        layers = [] if expand == cin else [_cbr(cin, expand, 1, act=act)]
        layers.append(_cbr(expand, expand, k, s, groups=expand, act=act))
        if se:
            layers.append(SqueezeExcite(expand, max(8, (expand // 4 + 4) // 8 * 8)))
        layers.append(nn.Sequential(nn.Conv2d(expand, cout, 1, bias=False), nn.BatchNorm2d(cout)))
        self.block, self.residual = nn.Sequential(*layers), s == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class MobileNetV3Small(nn.Module):
    """torchvision's MobileNetV3-small configuration (kernel, expansion, out, SE, activation, stride)."""

    CONFIG = [(3, 16, 16, True, nn.ReLU, 2), (3, 72, 24, False, nn.ReLU, 2), (3, 88, 24, False, nn.ReLU, 1),
              (5, 96, 40, True, nn.Hardswish, 2), (5, 240, 40, True, nn.Hardswish, 1),
              (5, 240, 40, True, nn.Hardswish, 1), (5, 120, 48, True, nn.Hardswish, 1),
              (5, 144, 48, True, nn.Hardswish, 1), (5, 288, 96, True, nn.Hardswish, 2),
              (5, 576, 96, True, nn.Hardswish, 1), (5, 576, 96, True, nn.Hardswish, 1)]

    def __init__(self, classes=10):
        super().__init__()
        layers, cin = [_cbr(3, 16, 3, 2, act=nn.Hardswish)], 16
        for k, e, c, se, act, s in self.CONFIG:
            layers.append(InvertedResidual(cin, k, e, c, se, act, s))
            cin = c
        layers.append(_cbr(cin, 576, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Linear(576, 128), nn.Hardswish(), nn.Linear(128, classes))

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


class MeanLinear(nn.Module):
    """A conv, a mean over the spatial dims, a classifier (NXP's and Arm's small head tests)."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(3, 16, 3, padding=1), nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


class ImagePooling(nn.Module):
    """DeepLabV3's ASPP image-pooling branch next to a 1x1 branch, concatenated and projected."""

    def __init__(self, c=16):
        super().__init__()
        self.stem, self.b1 = _cbr(3, c, 3, 2), _cbr(c, c, 1)
        self.pool_conv, self.project = _cbr(c, c, 1), _cbr(2 * c, c, 1)

    def forward(self, x):
        y = self.stem(x)
        pooled = F.interpolate(self.pool_conv(F.adaptive_avg_pool2d(y, 1)), size=y.shape[-2:], mode="bilinear",
                               align_corners=False)
        return self.project(torch.cat([self.b1(y), pooled], 1))


class Conv3dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv3d(2, 8, 3, padding=1), nn.Conv3d(8, 8, (2, 3, 3), stride=(2, 1, 1))

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x)))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                                dropout=0.0)

    def forward(self, src, tgt):
        return self.t(src, tgt)


class Verification(nn.Module):
    """One conv tower embeds two images; the head compares the embeddings: F.cosine_similarity (`cosine`) or the
    L2 distance torch.norm(a - b, dim=-1)."""

    def __init__(self, cosine: bool = True):
        super().__init__()
        self.tower = nn.Sequential(_cbr(3, 16, 3, 2), _cbr(16, 32, 3, 2))
        self.embed, self.cosine = nn.Linear(32, 16), cosine

    def _embedding(self, x):
        return self.embed(self.tower(x).mean((2, 3)))

    def forward(self, a, b):
        ea, eb = self._embedding(a), self._embedding(b)
        return F.cosine_similarity(ea, eb, dim=1) if self.cosine else torch.norm(ea - eb, dim=-1)


class ThresholdNormalize(nn.Module):
    """Features thresholded with a jump (nn.Threshold(0.1, -0.5)), then a map divided by its own channel sum."""

    def __init__(self, c=16):
        super().__init__()
        self.a, self.b, self.threshold = _cbr(3, c, 3), nn.Conv2d(3, c, 3, padding=1), nn.Threshold(0.1, -0.5)

    def forward(self, x):
        w = torch.relu(self.b(x))
        return self.threshold(self.a(x)) + w / (w.sum(1, keepdim=True) + 1e-3)


def _warm(model, *inputs):
    """Batch norms warmed up on batches of 2 (a 1 x 1 map of one image has no batch statistics); inputs of 1."""
    warm_up_batch_norm(model, tuple(torch.randn(2, *x.shape[1:]) for x in inputs))
    return model.eval(), inputs


MODELS = {
    "mobilenet_v1_025_vww": lambda: _warm(MobileNetV1(), torch.randn(1, 3, 96, 96)),
    "mobilenet_v3_small": lambda: _warm(MobileNetV3Small(), torch.randn(1, 3, 96, 96)),
    "mean_linear": lambda: (MeanLinear().eval(), (torch.randn(1, 3, 12, 10),)),
    "aspp_image_pooling": lambda: _warm(ImagePooling(), torch.randn(1, 3, 24, 20)),
    "conv3d": lambda: (Conv3dNet().eval(), (torch.randn(1, 2, 6, 10, 8),)),
    "transformer": lambda: (Transformer().eval(), (torch.randn(5, 1, 16), torch.randn(4, 1, 16))),
    "verification_cosine": lambda: _warm(Verification(), torch.randn(1, 3, 24, 20), torch.randn(1, 3, 24, 20)),
    "verification_l2": lambda: _warm(Verification(cosine=False), torch.randn(1, 3, 24, 20),
                                     torch.randn(1, 3, 24, 20)),
    "threshold_normalize": lambda: _warm(ThresholdNormalize(), torch.randn(1, 3, 12, 10)),
}

"""The models benchmarks/real_models.py lowers, as their packages build them: name -> () -> (model in eval mode,
example inputs, calibration samples, evaluation samples). Random weights everywhere, nothing downloaded.

- the MLPerf Tiny models of the executorch wheel (`executorch.examples.models.mlperf_tiny`), imported as they are;
  batch norms warmed in train mode on 4 random batches of 8;
- Hugging Face transformers models (Apache-2.0, on PyPI) built from small configs, with the attention
  implementation transformers picks by default, re-initialized as tests/models/hf_blocks.py does (transformers'
  own std-0.02 initialization gives constant logits); the wrapper returns the logits;
- a detection head in the export mode of the YOLO family, reconstructed from the facts of issue 42 (the YOLO
  package is AGPL: nothing of it is imported or copied): the anchor grid and the stride column recomputed in every
  forward() from the feature maps (`arange(...).type_as(feat) + 0.5`, `meshgrid`, `stack`, `new_full`), DFL (a
  softmax over 16 bins, then a 1x1 convolution with fixed weights 0..15) and dist2bbox.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

CALIBRATION, EVALUATION = 4, 4
TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if TESTS not in sys.path:  # the transformers models' wrapper and weights: tests/models/hf_blocks.py
    sys.path.append(TESTS)


def _samples(make, n: int) -> list[tuple]:
    return [make() for _ in range(n)]


def _image(shape):
    return lambda: (torch.randn(shape),)


def _wheel(cls_name: str, shape: tuple):
    def build():
        from executorch.examples.models import mlperf_tiny

        torch.manual_seed(0)
        model = getattr(mlperf_tiny, cls_name)().train()
        with torch.no_grad():
            for _ in range(4):
                model(torch.randn(8, *shape[1:]))
        make = _image(shape)
        return model.eval(), make(), _samples(make, CALIBRATION), _samples(make, EVALUATION)
    return build


def _hf(model_class: str, config_class: str, make, **config):
    def build():
        import transformers

        from models.hf_blocks import Logits, random_weights

        torch.manual_seed(0)
        model = random_weights(getattr(transformers, model_class)(getattr(transformers, config_class)(**config)))
        return Logits(model).eval(), make(), _samples(make, CALIBRATION), _samples(make, EVALUATION)
    return build


_VISION = dict(image_size=32, num_channels=3, num_labels=4)
_ENCODER = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


class ExportHead(nn.Module):
    """A detector with the YOLO family's export-mode head: per level a box branch (4 x 16 DFL bins) and a class
    branch, anchors and strides recomputed in forward() from the feature maps, boxes decoded with DFL + dist2bbox
    and multiplied by the stride column; output [1, 4 + classes, anchors]."""

    BINS = 16

    def __init__(self, levels: int = 2, classes: int = 4, width: int = 16):
        super().__init__()
        self.nc, self.levels = classes, levels
        layers, c = [], 3
        for _ in range(3):  # stride 8 at the first level
            layers += [nn.Conv2d(c, width, 3, 2, 1), nn.SiLU()]
            c = width
        self.stem = nn.Sequential(*layers)
        self.down = nn.ModuleList(nn.Sequential(nn.Conv2d(width, width, 3, 2, 1), nn.SiLU()) for _ in range(levels - 1))
        self.box = nn.ModuleList(nn.Conv2d(width, 4 * self.BINS, 1) for _ in range(levels))
        self.cls = nn.ModuleList(nn.Conv2d(width, classes, 1) for _ in range(levels))
        self.dfl = nn.Conv2d(self.BINS, 1, 1, bias=False).requires_grad_(False)
        self.dfl.weight.data[:] = torch.arange(self.BINS, dtype=torch.float).view(1, self.BINS, 1, 1)
        self.register_buffer("stride", torch.tensor([8.0 * 2 ** i for i in range(levels)]))

    def forward(self, x):
        feats = [self.stem(x)]
        for down in self.down:
            feats.append(down(feats[-1]))
        outs = [torch.cat((self.box[i](f), self.cls[i](f)), 1) for i, f in enumerate(feats)]
        points, columns = [], []
        for i, f in enumerate(feats):  # the export-mode anchors: shapes and the stride buffer only
            h, w = f.shape[2:]
            sx = torch.arange(w).type_as(feats[0]) + 0.5
            sy = torch.arange(h).type_as(feats[0]) + 0.5
            sy, sx = torch.meshgrid(sy, sx, indexing="ij")
            points.append(torch.stack((sx, sy), -1).view(-1, 2))
            columns.append(feats[0].new_full((h * w, 1), self.stride[i], dtype=feats[0].dtype))
        self.anchors = torch.cat(points).transpose(0, 1)  # plain attributes, as the head assigns them
        self.strides = torch.cat(columns).transpose(0, 1)
        flat = torch.cat([o.view(1, 4 * self.BINS + self.nc, -1) for o in outs], 2)
        box, cls = flat.split((4 * self.BINS, self.nc), 1)
        a = box.shape[2]
        dist = self.dfl(box.view(1, 4, self.BINS, a).transpose(2, 1).softmax(1)).view(1, 4, a)
        lt, rb = dist.chunk(2, 1)
        anchors = self.anchors.unsqueeze(0)
        x1y1, x2y2 = anchors - lt, anchors + rb
        boxes = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * self.strides
        return torch.cat((boxes, cls.sigmoid()), 1)


def _yolo_head(levels: int):
    def build():
        torch.manual_seed(0)
        make = _image((1, 3, 64, 64))
        return ExportHead(levels).eval(), make(), _samples(make, CALIBRATION), _samples(make, EVALUATION)
    return build


MODELS = {
    "mlperf_tiny.MobileNetV1025": _wheel("MobileNetV1025", (1, 3, 96, 96)),
    "mlperf_tiny.ResNet8": _wheel("ResNet8", (1, 3, 32, 32)),
    "mlperf_tiny.DSCNNKWS": _wheel("DSCNNKWS", (1, 1, 49, 10)),
    "mlperf_tiny.DeepAutoEncoder": _wheel("DeepAutoEncoder", (1, 640)),
    "transformers.ViT": _hf("ViTForImageClassification", "ViTConfig", _image((1, 3, 32, 32)), patch_size=8,
                            **_VISION, **_ENCODER),
    "transformers.DeiT": _hf("DeiTForImageClassification", "DeiTConfig", _image((1, 3, 32, 32)), patch_size=8,
                             **_VISION, **_ENCODER),
    "transformers.Swin": _hf("SwinForImageClassification", "SwinConfig", _image((1, 3, 32, 32)), patch_size=4,
                             embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4, mlp_ratio=2.0, **_VISION),
    "transformers.MobileViT": _hf("MobileViTForImageClassification", "MobileViTConfig", _image((1, 3, 32, 32)),
                                  hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
                                  num_attention_heads=2, **_VISION),
    "transformers.Wav2Vec2": _hf("Wav2Vec2ForSequenceClassification", "Wav2Vec2Config", _image((1, 1600)),
                                 conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                                 num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, num_labels=4,
                                 classifier_proj_size=16, **_ENCODER),
    "transformers.BERT": _hf("BertForSequenceClassification", "BertConfig", lambda: (torch.randint(0, 100, (1, 16)),),
                             vocab_size=100, max_position_embeddings=32, num_labels=4, **_ENCODER),
    "yolo_export_head.2_levels": _yolo_head(2),
    "yolo_export_head.3_levels": _yolo_head(3),
}

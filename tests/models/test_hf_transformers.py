"""Hugging Face transformers models as the package builds them, lowered whole on imxrt700 and imx93.

Models of six families across vision, audio and text (ViT, DeiT, Swin, MobileViT, Wav2Vec2, BERT) are built from
small configs (one encoder layer: lowering time grows with the layers, and one holds every construct) with random
weights (nothing is downloaded: transformers 5.23, Apache-2.0, pinned in the test extra) and run with the
package's default attention (`sdpa`, which passes SDPA a boolean mask, all true here: `passes/sdpa_to_matmul.py`
drops it). Each lowers into one partition with no CPU compute node, except the nodes `CPU_NODES` lists per family
and target, each with the text of the rule that keeps it on the CPU: a text model's token embedding, whose index
is the run-time token ids (int64, which int8 partitions do not take), so the lookup runs on the CPU in front of
the partition (the position and token-type embeddings, indexed by constants, are folded and sliced and run on the
NPU); on imx93 a patch embedding whose stride (8) is beyond Vela's.

Bound: the .pte on the host runtime, against the float model over 4 samples, within 1 dB SQNR of PyTorch's
quantized model (convert_pt2e) against the float model. An element-wise step bound does not hold for whole
models: every layer norm is computed from int8 pieces (mean, sub, rsqrt), and a one-step difference of a row's
mean between LiteRT's int8 MEAN and PyTorch's float mean + rounding is amplified downstream (see
tests/models/test_transformers.py, which measured it); the SQNR bound says the difference is rounding noise of the
size of quantization's own, not an error of a converted op.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from executorch_neutron import lower
from executorch_neutron.numerics import sqnr
from executorch_neutron.runtime import run
from models.hf_blocks import Logits, random_weights, varied

SAMPLES = 4  # calibration samples (besides the example input), also the samples the SQNR is measured on


def _image():
    return torch.randn(1, 3, 32, 32)


def _vit():
    c = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64, num_labels=10)
    return transformers.ViTForImageClassification(c), _image


def _deit():
    c = transformers.DeiTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=64, num_labels=10)
    return transformers.DeiTForImageClassification(c), _image


def _swin():
    c = transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                                window_size=4, mlp_ratio=2.0, num_labels=10)
    return transformers.SwinForImageClassification(c), _image


def _mobilevit():
    c = transformers.MobileViTConfig(image_size=32, hidden_sizes=[16, 24, 32],
                                     neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 48], num_attention_heads=2,
                                     num_labels=10)
    return transformers.MobileViTForImageClassification(c), _image


def _wav2vec2():
    c = transformers.Wav2Vec2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                    intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 4),
                                    conv_kernel=(10, 4), num_conv_pos_embeddings=8,
                                    num_conv_pos_embedding_groups=2, num_labels=4)
    return transformers.Wav2Vec2ForSequenceClassification(c), lambda: torch.randn(1, 1600)


def _bert():
    c = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=32, num_labels=3)
    return transformers.BertForSequenceClassification(c), lambda: torch.randint(0, 100, (1, 16))


FAMILIES = {"vit": _vit, "deit": _deit, "swin": _swin, "mobilevit": _mobilevit, "wav2vec2": _wav2vec2,
            "bert": _bert}

#: the token lookup of a text model: its index is the model's int64 input
_EMBEDDING = {"aten.embedding.default": "no gather or scatter kernel: it reads or writes at positions given by an "
                                        "index tensor computed at run time"}
#: (family, target) -> {edge op: the rule text its reason holds} of the CPU compute nodes allowed
#: a patch embedding whose stride is its kernel, 8 (ViT, DeiT), is beyond Vela's stride limit
_PATCH_STRIDE = {"aten.convolution.default": "Stride H must be in the range [1, 3]"}
CPU_NODES = {("bert", "imxrt700"): _EMBEDDING, ("bert", "imx93"): _EMBEDDING,
             ("vit", "imx93"): _PATCH_STRIDE, ("deit", "imx93"): _PATCH_STRIDE}


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lowers_whole(family, target):
    torch.manual_seed(0)
    model, sample = FAMILIES[family]()
    model = Logits(random_weights(model).eval())
    x = (sample(),)
    calib = [x] + [(sample(),) for _ in range(SAMPLES)]
    result = lower(model, x, calib, target=target)
    report = result.report
    allowed = CPU_NODES.get((family, target), {})
    print(f"{family} on {target}: {len(report.partitions)} partition(s), CPU: "
          f"{sorted((r.op, r.reason) for r in report.rejections)}")
    assert len(report.partitions) == 1, str(report)
    for r in report.rejections:
        assert r.op in allowed and allowed[r.op] in r.reason, f"{r.op} ({r.node}) on the CPU: {r.reason}"

    ours, reference, float_out = [], [], []
    with torch.no_grad():
        for s in calib[1:]:
            ours.append(run(result.pte, s)[0].numpy())
            reference.append(result.quantized_model(*s).numpy())
            float_out.append(model(*s).numpy())
    ours, reference, float_out = map(np.stack, (ours, reference, float_out))
    assert varied(float_out), "the float model's outputs are constant: the SQNR below would compare nothing"
    pte_db, quantized_db = sqnr(float_out, ours), sqnr(float_out, reference)
    print(f"{family} on {target}: SQNR vs float {pte_db:.1f} dB, quantized PyTorch {quantized_db:.1f} dB; "
          f".pte vs quantized PyTorch {sqnr(reference, ours):.1f} dB; CPU: {sorted(r.op for r in report.rejections)}")
    assert pte_db >= quantized_db - 1.0, f"SQNR {pte_db:.1f} dB vs quantized PyTorch {quantized_db:.1f} dB"

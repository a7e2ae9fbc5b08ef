"""F.scaled_dot_product_attention with every kind of mask (passes/sdpa_to_matmul.py), and hand-written attention
masking its scores before the softmax (passes/masked_softmax_decompose.py), on the NPU of both targets.

The rewrite computes SDPA (float, before quantization); lowered, the whole attention is one partition with no CPU
node on imxrt700 and imx93, and the .pte is within 1 output step of PyTorch's quantized model (one op's bound:
measured 0-1). Masked entries get probability exactly 0 in the .pte and in PyTorch's quantized model (attention
with an identity value matrix returns its probabilities). A boolean mask computed at run time, and a constant mask
with masked entries where the table has no sum / rsqrt, stay on the CPU with the reason.
"""

import pytest
import torch
import torch.nn.functional as F
from harness import pte_steps

from executorch_neutron import lower
from executorch_neutron.models.zoo import calibration
from executorch_neutron.passes.fold_constants import fold_constants
from executorch_neutron.passes.masked_softmax_decompose import masked_softmax_decompose
from executorch_neutron.passes.sdpa_to_matmul import (
    NO_RENORM,
    RUNTIME_BOOL_MASK,
    sdpa_to_matmul,
)
from executorch_neutron.runtime import run

T, HEADS, D = 12, 2, 8  # tokens, heads, head size (distinct so a wrong transpose cannot pass)


class Attention(torch.nn.Module):
    """A projection to q, k, v and SDPA with `mask` (a tensor or a function of the length) and SDPA's keywords."""

    def __init__(self, mask=None, **sdpa):
        super().__init__()
        self.mask, self.sdpa = mask, sdpa
        self.qkv = torch.nn.Linear(16, 3 * HEADS * D)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, D).permute(2, 0, 3, 1, 4)
        mask = self.mask(t) if callable(self.mask) else self.mask
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.sdpa)
        return out.transpose(1, 2).reshape(b, t, HEADS * D)


def _causal(t):
    return torch.ones(t, t, dtype=torch.bool).tril()


CASES = {
    "no_mask": lambda: Attention(),
    "scale": lambda: Attention(scale=0.2),
    "bool_all_true": lambda: Attention(lambda t: torch.ones(1, 1, t, t, dtype=torch.bool)),
    # transformers' sdpa mask of an encoder without padding: computed from arange and shapes, all true
    "bool_from_arange": lambda: Attention(lambda t: (torch.arange(t)[None, None, :, None] >= 0).expand(1, -1, t, t)),
    "is_causal": lambda: Attention(is_causal=True),
    "is_causal_scale": lambda: Attention(is_causal=True, scale=0.5),
    "bool_causal": lambda: Attention(_causal),
    "bool_padding": lambda: Attention(lambda t: torch.arange(t)[None, :] < t - 3),
    "bool_empty_row": lambda: Attention(lambda t: _causal(t) & (torch.arange(t)[:, None] > 0)),
    "additive": lambda: Attention(lambda t: torch.linspace(-1, 1, t * t).view(t, t)),
    "additive_minus_inf": lambda: Attention(
        lambda t: torch.zeros(t, t).masked_fill(~_causal(t), float("-inf"))),
}


class HandWritten(torch.nn.Module):
    """Attention as eager code writes it: softmax(mask(q @ k^T * scale)) @ v, the mask applied by `masking`."""

    def __init__(self, masking, mask):
        super().__init__()
        self.masking = masking
        self.register_buffer("mask", mask)
        self.qkv = torch.nn.Linear(16, 3 * HEADS * D)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, D).permute(2, 0, 3, 1, 4)
        scores = self.masking(q @ k.transpose(-2, -1) * D ** -0.5, self.mask)
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, HEADS * D)


HAND_WRITTEN = {
    "where_minus_inf": lambda: HandWritten(lambda s, m: torch.where(m, s, float("-inf")), _causal(T)),
    "masked_fill_minus_inf": lambda: HandWritten(lambda s, m: s.masked_fill(~m, float("-inf")), _causal(T)),
    "where_finfo_min": lambda: HandWritten(lambda s, m: torch.where(m, s, torch.finfo(s.dtype).min), _causal(T)),
    "where_all_true": lambda: HandWritten(lambda s, m: torch.where(m, s, float("-inf")),
                                          torch.ones(T, T, dtype=torch.bool)),
}


def _inputs():
    return (torch.randn(1, T, 16),)


@pytest.mark.fast
@pytest.mark.parametrize("name", CASES)
def test_rewrite_computes_sdpa(name):
    torch.manual_seed(0)
    model, x = CASES[name]().eval(), _inputs()
    gm = fold_constants(torch.export.export(model, x, strict=False).module())
    gm = sdpa_to_matmul(gm)
    assert not any(n.target == torch.ops.aten.scaled_dot_product_attention.default for n in gm.graph.nodes)
    with torch.no_grad():
        torch.testing.assert_close(gm(*x), model(*x), atol=1e-5, rtol=1e-5)


@pytest.mark.fast
@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_rewrite_computes_the_masked_softmax(name):
    torch.manual_seed(0)
    model, x = HAND_WRITTEN[name]().eval(), _inputs()
    gm = masked_softmax_decompose(fold_constants(torch.export.export(model, x, strict=False).module()))
    assert not any(n.target in (torch.ops.aten.where.ScalarOther, torch.ops.aten.masked_fill.Scalar)
                   for n in gm.graph.nodes), gm.graph
    with torch.no_grad():
        torch.testing.assert_close(gm(*x), model(*x), atol=1e-5, rtol=1e-5)


ON_THE_NPU = {**CASES, **{f"hand_written_{k}": v for k, v in HAND_WRITTEN.items()}}


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
@pytest.mark.parametrize("name", ON_THE_NPU)
def test_attention_on_the_npu(name, target):
    torch.manual_seed(0)
    model, x = ON_THE_NPU[name]().eval(), _inputs()
    calib = [x] + calibration(x, 4)
    result = lower(model, x, calib, target=target)
    report = result.report
    assert len(report.partitions) == 1 and report.rejections == [], str(report)
    worst = pte_steps(result, calib[:4])
    print(f"{name} on {target}: max {worst} steps")
    assert worst <= 1, f"max {worst} steps > 1"


class Probabilities(torch.nn.Module):
    """Causal SDPA of q, k with an identity value matrix: its output is the attention probabilities."""

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
def test_masked_probabilities_are_exactly_zero(target):
    torch.manual_seed(1)
    eye = torch.eye(T).expand(1, HEADS, T, T).contiguous()

    def sample():
        return torch.randn(1, HEADS, T, D) * 2, torch.randn(1, HEADS, T, D) * 2, eye

    x, calib = sample(), [sample() for _ in range(4)]
    result = lower(Probabilities(), x, calib, target=target)
    assert len(result.report.partitions) == 1 and result.report.rejections == [], str(result.report)
    masked = ~torch.ones(T, T, dtype=torch.bool).tril()
    with torch.no_grad():
        for s in calib:
            for name, probs in (("the .pte", run(result.pte, s)[0]), ("quantized PyTorch", result.quantized_model(*s))):
                assert bool((probs[..., masked] == 0).all()), f"{name}: a masked probability is not 0"
                assert bool((probs[..., ~masked] > 0).any()), f"{name}: no kept probability"


class RuntimeMask(Attention):
    """Attention whose mask is a second input of the model."""

    def forward(self, x, mask):
        self.mask = mask
        return super().forward(x)


def test_runtime_boolean_mask_stays_on_the_cpu_with_the_reason():
    torch.manual_seed(0)
    model, x = RuntimeMask().eval(), (*_inputs(), torch.rand(1, 1, T, T) > 0.3)
    result = lower(model, x, [x])
    attention = [r for r in result.report.rejections if r.op in ("aten._softmax.default", "aten.where.self")]
    assert attention and all(RUNTIME_BOOL_MASK in r.reason for r in attention), str(result.report)


def test_runtime_additive_mask_runs_on_the_npu():
    torch.manual_seed(0)
    model, x = RuntimeMask().eval(), (*_inputs(), torch.randn(1, 1, T, T))
    calib = [x] + calibration(x, 4)
    result = lower(model, x, calib)
    assert len(result.report.partitions) == 1 and result.report.rejections == [], str(result.report)
    assert pte_steps(result, calib[:4]) <= 1


def test_causal_mask_without_sum_and_rsqrt_stays_on_the_cpu_with_the_reason():
    """Neutron's documented table has no sum and no rsqrt: a causal SDPA is left whole, with the reason (on its
    pieces; its softmax, over the last dim of a rank-4 tensor, also breaks the documented table's softmax rule,
    which its reason may name instead)."""
    model, x = CASES["is_causal"]().eval(), _inputs()
    result = lower(model, x, [x], constraints="documented")
    rejections = result.report.rejections
    softmax = [r for r in rejections if "softmax" in r.op]
    assert softmax and all(NO_RENORM in r.reason or "softmax over the channel dimension" in r.reason
                           for r in softmax), str(result.report)
    masking = [r for r in rejections if r.op in ("aten.where.self", "aten.logical_not.default", "aten.any.dim")]
    assert masking and all(NO_RENORM in r.reason for r in masking), str(result.report)

"""Issue 36, cause 1: attention as other back ends' test suites write it (nn.Transformer at batch 1, sequence
first; nn.MultiheadAttention whose query is not its key) must never give a program that aborts the process.

Before: the packed in-projection weight was split on the CPU after constant folding (`split` has several results,
which fold_constants skipped), its per-channel quantize stayed on the CPU with float scales, and the host run died
with SIGABRT in ExecuTorch's quantize_per_channel kernel. Now the split folds into two constant weights, each
quantized and delegated like any linear's; and runtime.validate refuses such a program in one line instead of
letting it abort (checked on a program lowered with the old folding)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.passes import fold_constants as fold
from executorch_neutron.runtime import run
from executorch_neutron.runtime.validate import InvalidProgram, check_program
from harness import pte_steps

TARGETS = ("imxrt700", "imx93")


class CrossAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2)

    def forward(self, q, kv):
        return self.mha(q, kv, kv, need_weights=False)[0]


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                                dropout=0.0)

    def forward(self, src, tgt):
        return self.t(src, tgt)


CASES = {
    "cross_attention": lambda: (CrossAttention(), (torch.randn(4, 1, 16), torch.randn(5, 1, 16))),
    "transformer": lambda: (TinyTransformer(), (torch.randn(5, 1, 16), torch.randn(4, 1, 16))),
}
#: whole attention blocks: softmax, two matmuls and the projections each round once; a transformer adds layer
#: norms (mean, rsqrt) and a feed-forward: within a few output steps of PyTorch's quantized model
STEPS = {"cross_attention": 3, "transformer": 6}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", CASES)
def test_attention_lowers_whole_and_runs(name, target):
    torch.manual_seed(0)
    model, x = CASES[name]()
    samples = [x] + [tuple(torch.randn_like(t) for t in x) for _ in range(3)]
    r = lower(model.eval(), x, samples, target=target)
    assert r.report.rejections == [], [(j.node, j.reason) for j in r.report.rejections]
    assert len(r.report.partitions) == 1
    assert pte_steps(r, samples[:2]) <= STEPS[name]


def test_validate_refuses_a_per_channel_quantize_with_float_scales(monkeypatch):
    """The program of the old folding (split left on the CPU) is refused in one line, before the runtime aborts."""
    monkeypatch.setattr(fold, "_foldable_list_op", lambda node: False)
    monkeypatch.setattr("executorch_neutron.lowering._check_runnable", lambda pte: None)
    torch.manual_seed(0)
    model, x = CASES["cross_attention"]()
    r = lower(model.eval(), x, [x])
    with pytest.raises(InvalidProgram, match="quantize_per_channel.out has scales of dtype code 6; its kernel aborts "
                                             "unless they are double"):
        check_program(r.pte)
    with pytest.raises(InvalidProgram):
        run(r.pte, x)


def test_lowering_refuses_to_emit_such_a_program(monkeypatch):
    from executorch_neutron import LoweringError

    monkeypatch.setattr(fold, "_foldable_list_op", lambda node: False)
    torch.manual_seed(0)
    model, x = CASES["cross_attention"]()
    with pytest.raises(LoweringError, match="would abort ExecuTorch's runtime.*quantize_per_channel"):
        lower(model.eval(), x, [x])

"""Issue 36, cause 1: attention as other back ends' test suites write it (nn.Transformer at batch 1, sequence
first; nn.MultiheadAttention whose query is not its key) must never give a program that aborts the process.

Before: the packed in-projection weight was split on the CPU after constant folding (`split` has several results,
which fold_constants skipped), its per-channel quantize stayed on the CPU with float scales, and the host run died
with SIGABRT in ExecuTorch's quantize_per_channel kernel. Now the split folds into two constant weights, each
quantized and delegated like any linear's; and runtime.validate refuses such a program in one line instead of
letting it abort (checked on such a quantize written by hand); a weight computed at run time is quantized per
tensor."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.runtime import run
from executorch_neutron.runtime.validate import InvalidProgram, check_program
from harness import pte_steps

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_models import Transformer  # noqa: E402

TARGETS = ("imxrt700", "imx93")


class CrossAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2)

    def forward(self, q, kv):
        return self.mha(q, kv, kv, need_weights=False)[0]


CASES = {
    "cross_attention": lambda: (CrossAttention(), (torch.randn(4, 1, 16), torch.randn(5, 1, 16))),
    "transformer": lambda: (Transformer(), (torch.randn(5, 1, 16), torch.randn(4, 1, 16))),
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


class PerChannelQuantize(nn.Module):
    """A per-channel quantize of a run-time tensor with float32 scales, as the old lowering left on the CPU."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scales", torch.full((4,), 0.05))
        self.register_buffer("zero_points", torch.zeros(4, dtype=torch.int64))

    def forward(self, x):
        q = torch.ops.quantized_decomposed.quantize_per_channel(x, self.scales, self.zero_points, 0, -127, 127,
                                                                  torch.int8)
        return q.to(torch.float32)


def _aborting_program() -> bytes:
    from executorch.exir import to_edge

    x = (torch.randn(4, 6),)
    return to_edge(torch.export.export(PerChannelQuantize(), x)).to_executorch().buffer


def test_validate_refuses_a_per_channel_quantize_with_float_scales():
    """Refused in one line before ExecuTorch's quantize_per_channel kernel aborts the process on it."""
    pte = _aborting_program()
    with pytest.raises(InvalidProgram, match="quantize_per_channel.out has scales of dtype code 6; its kernel aborts "
                                             "unless they are double"):
        check_program(pte)
    with pytest.raises(InvalidProgram):
        run(pte, (torch.randn(4, 6),))


def test_lowering_refuses_to_emit_such_a_program():
    from executorch_neutron import LoweringError
    from executorch_neutron.lowering import _check_runnable

    with pytest.raises(LoweringError, match="would abort ExecuTorch's runtime.*quantize_per_channel"):
        _check_runnable(_aborting_program())


class RuntimeWeights(nn.Module):
    def forward(self, x, w):
        return torch.nn.functional.linear(x, w)


def test_a_linear_with_run_time_weights_runs():
    """Its weight is quantized on the CPU, per tensor: a per-channel quantize (float scales) would abort."""
    torch.manual_seed(0)
    x = (torch.randn(2, 16), torch.randn(8, 16))
    r = lower(RuntimeWeights().eval(), x, [x])
    assert [j.reason for j in r.report.rejections if j.op == "aten.linear.default"] == [
        "weights are not a constant int8 tensor: constant int8 weights"]  # what was found: the rule
    out = run(r.pte, x)[0]
    torch.testing.assert_close(out, torch.nn.functional.linear(*x), atol=0.15, rtol=0.05)  # int8 operands

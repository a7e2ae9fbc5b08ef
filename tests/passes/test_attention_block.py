"""matmul -> bmm end to end: a self-attention block runs as one int8 partition (two bmm, softmax, linears)."""

import torch
from torch import nn

from harness import assert_within_steps, lower_and_run


class Attention(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.q, self.k, self.o = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, 8)

    def forward(self, x):
        a = torch.softmax(self.q(x) @ self.k(x).transpose(1, 2), dim=-1)
        return self.o(a @ x)


def test_attention_is_one_partition_within_two_steps():
    """Bound 2 steps: the block chains 6 int8 ops; each is within 1 step of its own output, and a one-step
    difference in the softmax probabilities (scale 1/256) moves the second bmm's result by up to one step."""
    torch.manual_seed(0)
    r = lower_and_run(Attention().eval(), (torch.randn(1, 8, 16),))
    assert r.delegated_ops["aten.bmm.default"] == 2, str(r.result.report)
    assert r.result.report.rejections == []
    assert_within_steps(r.output, r.reference, 2, r.output_scale)

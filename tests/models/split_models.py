"""Models that split into several NPU partitions around operators left on the CPU (the report's graph shows why).

- `ThreePartitions`: conv, relu | cumsum (no NPU kernel: float on the CPU) | conv, relu | flip (no NPU kernel) |
  conv: three NPU partitions on Neutron and Ethos-U targets. (GroupNorm and PixelShuffle, used here before, run on
  the NPU since their rewrites in passes/.)

Used by tests/report/test_graph.py and benchmarks/report_screenshots.py.
"""

from __future__ import annotations

import torch
from torch import nn


class ThreePartitions(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.c3 = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.c1(x)).cumsum(dim=3)
        y = torch.flip(torch.relu(self.c2(y)), dims=[3])
        return self.c3(y)


def three_partitions(seed: int = 0):
    torch.manual_seed(seed)
    return ThreePartitions().eval(), (torch.randn(1, 3, 8, 8),)

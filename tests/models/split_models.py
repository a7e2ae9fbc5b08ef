"""Models that split into several NPU partitions around operators left on the CPU (the report's graph shows why).

- `ThreePartitions`: conv, relu | GroupNorm (no Neutron kernel) | conv, relu | PixelShuffle (not in the operator
  table: float CPU copies) | conv: three NPU partitions on Neutron and Ethos-U targets.

Used by tests/report/test_graph.py and benchmarks/report_screenshots.py.
"""

from __future__ import annotations

import torch
from torch import nn


class ThreePartitions(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.gn = nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16)
        self.c2, self.ps, self.c3 = nn.Conv2d(16, 16, 3, padding=1), nn.PixelShuffle(2), nn.Conv2d(4, 8, 3, padding=1)

    def forward(self, x):
        return self.c3(self.ps(torch.relu(self.c2(self.gn(torch.relu(self.c1(x)))))))


def three_partitions(seed: int = 0):
    torch.manual_seed(seed)
    return ThreePartitions().eval(), (torch.randn(1, 3, 8, 8),)

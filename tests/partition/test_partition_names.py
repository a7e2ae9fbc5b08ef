"""A partition fed directly by another partition keeps its own name (tag), report entry and intermediate file."""

import numpy as np
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration


class FeedsTwoWays(nn.Module):
    """Partition 0 (conv+relu) feeds a CPU op (a grouped conv with 4 output channels per group: the documented
    table's num_macs rule keeps it on the CPU) and, directly, partition 1."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 16, 3, padding=1)
        self.grouped = nn.Conv2d(16, 16, 3, groups=4, padding=1)

    def forward(self, x):
        y = torch.relu(self.c(x))
        y = self.grouped(y) * torch.sigmoid(y)
        return torch.cat([y, y], 1).mean((2, 3))


def test_each_partition_has_its_own_name(tmp_path):
    torch.manual_seed(0)
    x = (torch.randn(1, 3, 8, 6),)
    r = lower(FeedsTwoWays().eval(), x, [x] + calibration(x, 3), intermediates_dir=str(tmp_path),
              constraints="documented")
    parts = r.report.partitions
    assert [p.tag for p in parts] == ["neutron_0", "neutron_1"]
    assert parts[0].ops == {"aten.convolution.default": 1, "aten.relu.default": 1}
    assert parts[1].ops == {"aten.mul.Tensor": 1, "aten.sigmoid.default": 1, "aten.cat.default": 1,
                            "aten.mean.dim": 1}
    for p in parts:
        assert (tmp_path / f"{p.tag}.tflite").read_bytes() == p.tflite

    out = run(r.pte, x)[0].numpy()
    with torch.no_grad():
        ref = r.quantized_model(*x).numpy()
    scale = float(next(n for n in r.edge_program.exported_program().graph.nodes
                       if "dequantize_per_tensor" in str(n.target) and any(u.op == "output" for u in n.users)).args[1])
    assert np.abs(np.round((out - ref) / scale)).max() <= 1

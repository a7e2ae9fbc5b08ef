"""Two Ethos-U partitions that compile to one Vela command stream but keep different reference TFLites (round's
`* 10` and `/ 10`: equal int8 arithmetic, other scales) each keep their own host reference in the .pte."""

import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.runtime import run


class _RoundOneDecimal(nn.Module):
    def forward(self, x):
        return torch.round(x, decimals=1)


def test_equal_command_streams_keep_their_own_references():
    torch.manual_seed(0)
    x = torch.tensor([1.44, 1.45, 1.46, -1.44, -1.45, -1.46])  # the suite's test_round_decimals
    result = lower(_RoundOneDecimal(), (x,), [(x,)], target="imx93")
    assert len(result.report.partitions) == 2
    out = run(result.pte, [x])[0]
    assert torch.equal(out, result.quantized_model(x))

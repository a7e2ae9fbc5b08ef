"""Batch norm after conv (folded by prepare_pt2e) and after linear (folded by NeutronQuantizer's
fold_linear_batch_norm) never reaches the partitioner: one delegated conv / linear, nothing on the CPU."""

import pytest
import torch
from torch import nn

from harness import assert_within_steps, lower_and_run


def trained(m, shape):
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(*shape) * 2)
    return m.eval()


CASES = {
    "conv_bn": (lambda: trained(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)), (2, 3, 7, 9)), (1, 3, 7, 9),
                {"aten.convolution.default": 1}),
    "linear_bn": (lambda: trained(nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16)), (4, 12)), (3, 12),
                  {"aten.linear.default": 1}),
    "conv1d_bn": (lambda: trained(nn.Sequential(nn.Conv1d(4, 8, 3), nn.BatchNorm1d(8)), (2, 4, 11)), (1, 4, 11),
                  None),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_batch_norm_is_folded(case):
    make, shape, ops = case
    torch.manual_seed(0)
    r = lower_and_run(make(), (torch.randn(*shape),))
    assert not r.rejections, str(r.result.report)
    assert not any("batch_norm" in op for op in r.delegated_ops)
    if ops is not None:
        assert r.delegated_ops == ops
    assert_within_steps(r.output, r.reference, 1, r.output_scale)

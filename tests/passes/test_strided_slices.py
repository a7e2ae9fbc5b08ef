"""Strided slices (passes/strided_slice_to_reshape.py): the rewrite against PyTorch, and on the NPU of both targets.

The pass only reorganizes views and step-1 slices, so the rewritten graph must give exactly the original's values
(checked on random inputs against the exported program, PyTorch itself), and the lowered program must run on the
NPU with the same int8 values PyTorch's quantized model gives (0 steps: no arithmetic). Swin's patch merging (four
step-2 slices over H and W, concatenated) is the model case.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from executorch_neutron import lower
from executorch_neutron.passes.strided_slice_to_reshape import strided_slice_to_reshape

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import pte_steps  # noqa: E402

aten = torch.ops.aten


class Slice(nn.Module):
    def __init__(self, dim, start, end, step):
        super().__init__()
        self.dim, self.start, self.end, self.step = dim, start, end, step

    def forward(self, x):
        index = [slice(None)] * x.dim()
        index[self.dim] = slice(self.start, self.end, self.step)
        return x[tuple(index)] * 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 7), min_size=1, max_size=4), st.data())
def test_the_rewrite_gives_the_same_values(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    n = shape[dim]
    start = data.draw(st.one_of(st.none(), st.integers(-n, n)))
    end = data.draw(st.one_of(st.none(), st.integers(-n, n + 2)))
    step = data.draw(st.integers(2, 4))
    model = Slice(dim, start, end, step)
    x = torch.randn(*shape)
    if model(x).numel() == 0:
        return
    gm = torch.export.export(model, (x,)).module()
    rewritten = strided_slice_to_reshape(gm)
    left = [n.args for n in rewritten.graph.nodes if n.target == aten.slice.Tensor and len(n.args) > 4
            and n.args[4] != 1]
    for _ in range(2):
        y = torch.randn(*shape)
        assert torch.equal(rewritten(y), model(y))
    picked = range(n)[slice(start, end, step)]
    if max(0, picked[0] + len(picked) * step - n) <= min(picked[0], step - 1):
        assert not left, left  # every slice it can rewrite is rewritten


class PatchMerging(nn.Module):
    """The slicing of Swin's patch merging as transformers writes it ([B, H, W, C] in, [B, H/2 * W/2, 4C] out; its
    layer norm and linear follow in tests/models/test_hf_transformers.py's whole Swin)."""

    def forward(self, x):
        b = x.shape[0]
        x = torch.cat([x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :], x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]], -1)
        return x.view(b, -1, x.shape[-1]) * 1.0


class OddSlices(nn.Module):
    """Step 2 and 3 slices over an NCHW map, starts other than 0, a last group that ends exactly at the edge."""

    def forward(self, x):
        return torch.cat([x[:, :, 1::2, :], x[:, :, 0:6:2, :]], 1) + x[:, :, ::3, :][:, :, :1, :].mean()


@pytest.mark.parametrize("target", ["imxrt700", "imx93"])
@pytest.mark.parametrize("case, shape, bound", [(Slice(2, 1, None, 2), (1, 4, 8, 8), 0),
                                                (OddSlices(), (1, 4, 6, 6), 1),
                                                (PatchMerging(), (1, 8, 8, 8), 0)],
                         ids=["slice", "odd", "patch_merging"])
def test_strided_slices_run_on_the_npu(case, shape, bound, target):
    """One partition, no CPU node, against PyTorch's quantized model: slices and concatenations move int8 values (0
    steps); OddSlices' mean and add round once each (1 step)."""
    torch.manual_seed(0)
    samples = [(torch.randn(*shape),) for _ in range(4)]
    result = lower(case.eval(), samples[0], samples, target=target)
    assert len(result.report.partitions) == 1 and not result.report.rejections, str(result.report)
    assert pte_steps(result, samples) <= bound

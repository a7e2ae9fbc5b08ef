"""passes/fold_constants.py: computations on constants are folded before annotation, so they neither run on the CPU
nor split a partition; QAT keeps computations on parameters (they are trained), and the fold is bounded."""

import pytest
import torch
from torch import nn

from executorch_neutron import NeutronQuantizer
from executorch_neutron.passes.fold_constants import FOLD_MAX_ELEMENTS
from harness import assert_within_steps, lower_and_run


class BiasTable(nn.Module):
    """EfficientViT-style attention: scores + a bias table indexed per head (gathered, then one head selected)."""

    def __init__(self, tokens: int, as_parameter: bool):
        super().__init__()
        table = torch.randn(3, 2 * tokens) * 0.5
        if as_parameter:
            self.table = nn.Parameter(table)
        else:
            self.register_buffer("table", table)
        self.register_buffer("idx", torch.randint(0, 2 * tokens, (tokens, tokens)))
        self.q, self.k = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):  # [1, tokens, 8]
        scores = self.q(x) @ self.k(x).transpose(-2, -1)
        bias = self.table[:, self.idx]  # [heads, tokens, tokens]
        return (scores + bias[1]).softmax(-1)


class ConstantMask(nn.Module):
    """A mask made from nothing but constants (arange, comparison, fill)."""

    def forward(self, x):  # [1, 6, 6]
        n = x.shape[-1]
        i = torch.arange(n)
        mask = torch.zeros(n, n).masked_fill(i[None, :] > i[:, None], -4.0)
        return (x + mask).softmax(-1)


class StandardizedConv(nn.Module):
    """Weight standardization (BiT / NFNet-style StdConv): the conv's weights are computed from its parameters."""

    def __init__(self):
        super().__init__()
        self.w, self.b = nn.Parameter(torch.randn(8, 3, 3, 3)), nn.Parameter(torch.randn(8))

    def forward(self, x):
        w = (self.w - self.w.mean(dim=(1, 2, 3), keepdim=True)) / (self.w.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
        return torch.relu(torch.nn.functional.conv2d(x, w, self.b, padding=1))


class StrideTable(nn.Module):
    """A detector head's stride table, built in forward() from the feature map's shape and a stride buffer read back
    with .item() (a number, not a tensor, in the exported graph), scaled by Python arithmetic on it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("stride", torch.tensor([8.0, 16.0]))

    def forward(self, x):  # [1, 4, 6, 8]
        _, _, h, w = x.shape
        table = torch.cat([torch.full((h * w // 2,), self.stride[0].item() / 8),
                           torch.full((h * w // 2,), self.stride[1].item() / 8 + 1)])
        return x.flatten(2) * table.view(1, 1, -1)


# name: (model, input shape, output steps allowed). Attention: 2 steps, as in tests/models/test_transformers.py:
# the scores are a bmm of two computed int8 tensors, and their own 1-step difference passes through add + softmax.
CASES = {
    "buffer_table": (lambda: BiasTable(7, as_parameter=False), (1, 7, 8), 2),
    "parameter_table": (lambda: BiasTable(5, as_parameter=True), (1, 5, 8), 2),
    "constant_mask": (ConstantMask, (1, 6, 6), 1),
    "weight_standardized_conv": (StandardizedConv, (1, 3, 9, 7), 1),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_constant_computation_is_folded_into_one_partition(case):
    make, shape, bound = case
    torch.manual_seed(0)
    r = lower_and_run(make().eval(), (torch.randn(*shape),))
    assert not r.rejections, str(r.result.report)
    assert len(r.result.report.partitions) == 1
    assert_within_steps(r.output, r.reference, bound, r.output_scale)


def _transformed(model, x, **quantizer):
    gm = torch.export.export(model, (x,), strict=False).module()
    return NeutronQuantizer(**quantizer).transform_for_annotation(gm)


def _index_nodes(gm) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and "index" in str(n.target))


def test_qat_keeps_computations_on_parameters():
    """QAT trains the table after the passes: its gather stays in the graph and reads the trainable parameter; the
    same model prepared for PTQ has the gather folded away."""
    torch.manual_seed(0)
    model, x = BiasTable(5, as_parameter=True), torch.randn(1, 5, 8)
    assert _index_nodes(_transformed(model.train(), x, is_qat=True)) == 1
    assert _index_nodes(_transformed(model.eval(), x)) == 0


class BigExpand(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("row", torch.randn(1, 1, 2048))

    def forward(self, x):  # [1, 1024, 2048]: the expanded constant would hold 2M elements
        return x + self.row.expand(1, 1024, 2048).contiguous()


def test_results_over_the_limit_are_not_folded():
    assert 1024 * 2048 > FOLD_MAX_ELEMENTS
    gm = _transformed(BigExpand().eval(), torch.randn(1, 1024, 2048))
    assert any("expand" in str(n.target) for n in gm.graph.nodes if n.op == "call_function")
    assert all(b.numel() <= FOLD_MAX_ELEMENTS for b in gm.buffers())


class SplitWeights(nn.Module):
    """One packed parameter split into two linears' weights (attention's in-projection when query is not key)."""

    def __init__(self):
        super().__init__()
        self.w, self.b = nn.Parameter(torch.randn(24, 8)), nn.Parameter(torch.randn(24))

    def forward(self, q, kv):
        w_q, w_kv = self.w.split([8, 16])
        b_q, b_kv = self.b.split([8, 16])
        return torch.nn.functional.linear(q, w_q, b_q), torch.nn.functional.linear(kv, w_kv, b_kv)


@pytest.mark.fast
def test_a_split_of_a_parameter_folds_into_one_constant_per_part():
    from executorch_neutron.passes.fold_constants import fold_constants

    model = SplitWeights()
    q, kv = torch.randn(1, 3, 8), torch.randn(1, 5, 8)
    gm = torch.export.export(model, (q, kv)).module()
    folded = fold_constants(gm)
    ops = {str(n.target) for n in folded.graph.nodes if n.op == "call_function"}
    assert not any("split" in op or "getitem" in op for op in ops), ops
    for got, want in zip(folded(q, kv), model(q, kv)):
        torch.testing.assert_close(got, want)


@pytest.mark.fast
def test_numbers_read_from_constants_fold_and_the_tensors_built_from_them_too():
    """item() of a constant buffer and arithmetic on it become numbers in their readers' arguments; the full() they
    fill and the cat of those fold into one constant: no item, _local_scalar_dense, full or Python operator left."""
    import operator

    from executorch_neutron.passes.fold_constants import fold_constants

    model, x = StrideTable(), torch.randn(1, 4, 6, 8)
    gm = torch.export.export(model, (x,), strict=False).module()
    before = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert any("item" in str(n.target) for n in before) and any(n.target is operator.add for n in before)
    folded = fold_constants(gm)
    left = [str(n.target) for n in folded.graph.nodes if n.op == "call_function"]
    assert not any(k in op for op in left for k in ("item", "scalar_dense", "full", "cat", "_operator")), left
    torch.testing.assert_close(folded(x), model(x))

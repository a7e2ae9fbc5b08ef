"""The ATen rewrites of shape operators and scalar reductions compute what PyTorch computes (eager PyTorch in
float is the reference): passes/stack_to_cat.py, passes/expand_to_cat.py, passes/reduce_all_keepdim.py."""

import pytest
import torch

from harness import Fn
from executorch_neutron.passes.expand_to_cat import expand_to_cat
from executorch_neutron.passes.reduce_all_keepdim import reduce_all_keepdim
from executorch_neutron.passes.stack_to_cat import stack_to_cat

pytestmark = pytest.mark.fast
aten = torch.ops.aten

# name: (pass, forward, input shapes, the op that must be gone, or, for a reduction, must have no 0-d result)
CASES = {
    "stack_dim0": (stack_to_cat, lambda s, a, b: torch.stack([a, b], 0), [(3, 4), (3, 4)], aten.stack.default),
    "stack_neg": (stack_to_cat, lambda s, a, b, c: torch.stack([a, b, c], -1), [(2, 3, 5)] * 3, aten.stack.default),
    "expand_rows": (expand_to_cat, lambda s, a: a.expand(8, 32) + 0, [(1, 32)], aten.expand.default),
    "expand_two_dims": (expand_to_cat, lambda s, a: a.expand(6, 4, 9), [(1, 4, 1)], aten.expand.default),
    "expand_rank_up": (expand_to_cat, lambda s, a: a.expand(3, 4, 8, 16), [(8, 16)], aten.expand.default),
    "expand_factors": (expand_to_cat, lambda s, a: a.expand(-1, 512), [(3, 1)], aten.expand.default),
    "sum_all": (reduce_all_keepdim, lambda s, a: a.sum(), [(3, 4, 5)], aten.sum.dim_IntList),
    "mean_all": (reduce_all_keepdim, lambda s, a: a.mean(), [(3, 4, 5)], aten.mean.dim),
    "mean_dims": (reduce_all_keepdim, lambda s, a: a.mean((0, 1)), [(3, 4)], aten.mean.dim),
    "amax_all": (reduce_all_keepdim, lambda s, a: torch.amax(a), [(2, 3, 4, 5)], aten.amax.default),
    "amin_dim": (reduce_all_keepdim, lambda s, a: torch.amin(a, 0), [(7,)], aten.amin.default),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_rewrite_computes_the_same(case):
    rewrite, forward, shapes, gone = case
    torch.manual_seed(0)
    xs = tuple(torch.randn(*s) for s in shapes)
    model = Fn(forward).eval()
    gm = rewrite(torch.export.export(model, xs, strict=False).module())
    left = [n for n in gm.graph.nodes if n.target == gone]
    if rewrite is reduce_all_keepdim:
        assert left and all(n.meta["val"].dim() > 0 for n in left)
    else:
        assert not left
    torch.testing.assert_close(gm(*xs), model(*xs), rtol=1e-6, atol=1e-6)


def test_expand_with_a_large_prime_count_stays():
    x = torch.randn(1, 4)
    gm = expand_to_cat(torch.export.export(Fn(lambda s, a: a.expand(17, 4)), (x,), strict=False).module())
    assert aten.expand.default in {n.target for n in gm.graph.nodes}


def test_mean_with_a_dtype_stays():
    x = torch.randn(3, 4)
    gm = reduce_all_keepdim(torch.export.export(Fn(lambda s, a: a.mean(dtype=torch.float64)), (x,),
                                                strict=False).module())
    assert aten.mean.default in {n.target for n in gm.graph.nodes}

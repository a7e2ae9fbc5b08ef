"""passes/fold_constants.py, as a property: any composition of the ops that build values from static shapes, Python
numbers and constant buffers (arange, meshgrid ij / xy, stack, cat, full / new_full / full_like, zeros / ones(_like),
type_as / .to(dtype), expand, view / reshape, item(), comparisons, any / all, where, logical_*), including the ops
that read only a run-time tensor's dtype or shape, folds: the folded graph computes what the exported graph computes,
on inputs other than the example it was exported with (so nothing that reads the input's values was folded), and no
node is left whose value inputs are all constants.

Hypothesis draws a program: a source value, then a chain of steps, some of which mix in the run-time input's values
(after which the chain legitimately stays in the graph). Pass level only (torch.export + the pass): no lowering.
"""

from __future__ import annotations

import operator

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from executorch_neutron.passes.fold_constants import fold_constants

_aten = torch.ops.aten

# name -> value from the input x ([1, C, H, W]) and the module's buffer ([H, W]); x is read for its dtype or shape
SOURCES = {
    "arange_type_as": lambda m, x: torch.arange(x.shape[-1]).type_as(x) + 0.5,
    "arange_to_dtype": lambda m, x: torch.arange(x.shape[-2]).to(x.dtype) * 2,
    "new_full": lambda m, x: x.new_full((x.shape[-2], 1), 3.0, dtype=x.dtype),
    "new_zeros": lambda m, x: x.new_zeros((x.shape[-1],)) - 1,
    "new_ones": lambda m, x: x.new_ones((2, x.shape[-1])),
    "full_like": lambda m, x: torch.full_like(x, 0.25)[0, 0],
    "zeros_like": lambda m, x: torch.zeros_like(x).sum(1)[0] + 1,
    "ones_like": lambda m, x: torch.ones_like(x)[0].mean(0),
    "buffer": lambda m, x: m.table,
    "item_full": lambda m, x: torch.full((x.shape[-1],), m.table[0, 1].item()),
    "shape_numbers": lambda m, x: torch.full((2,), float(x.shape[-1] * x.shape[-2])),
}


def _meshgrid(t, indexing):
    a, b = t.flatten()[:3], t.flatten()[-2:] + 1
    first, second = torch.meshgrid(a, b, indexing=indexing)
    return torch.stack((first, second), -1).view(-1, 2)


# name -> value from a value t (and x, the module): each is one or a few of the listed ops
STEPS = {
    "meshgrid_ij": lambda m, x, t: _meshgrid(t, "ij"),
    "meshgrid_xy": lambda m, x, t: _meshgrid(t, "xy"),
    "stack": lambda m, x, t: torch.stack((t, t * 2), 0),
    "cat": lambda m, x, t: torch.cat((t.flatten(), m.table.flatten())),
    "expand": lambda m, x, t: t.flatten()[None].expand(3, -1),
    "expand_as": lambda m, x, t: t.flatten()[:1].expand_as(x[0, 0, 0]),
    "reshape": lambda m, x, t: t.reshape(-1, 1),
    "view_as": lambda m, x, t: t.flatten()[:1].expand(x.shape[-1]).contiguous().view_as(x[0, 0, 0]),
    "transpose": lambda m, x, t: t.reshape(1, -1).transpose(0, 1),
    "compare_where": lambda m, x, t: torch.where(t > t.flatten()[0], t, -t),
    "any": lambda m, x, t: torch.where((t == 1.5).any(), t + 1, t - 1),
    "all": lambda m, x, t: torch.where((t >= 0).all(), t * 3, t),
    "logical": lambda m, x, t: torch.logical_or(torch.logical_and(t > 0, t < 2), t.eq(3)).logical_not().type_as(x),
    "to_int": lambda m, x, t: (t * 2).to(torch.int32).to(x.dtype),
    "item": lambda m, x, t: x.new_full((2,), t.flatten()[-1].item()),
    "full_like_of": lambda m, x, t: torch.full_like(t, 2.0) + t,
    # these read the run-time input's values: what follows them must stay in the graph
    "runtime_add": lambda m, x, t: t + x.mean(),
    "runtime_where": lambda m, x, t: torch.where(x.flatten()[:1] > 0, t.flatten(), 0.0),
}


class Program(torch.nn.Module):
    """Chains of (source, steps), each ending added to the input's first element, concatenated."""

    def __init__(self, chains: list[tuple[str, list[str]]], h: int, w: int):
        super().__init__()
        self.chains = chains
        self.register_buffer("table", torch.linspace(-1.0, 2.0, h * w).view(h, w))

    def forward(self, x):
        outs = []
        for source, steps in self.chains:
            t = SOURCES[source](self, x)
            for step in steps:
                t = STEPS[step](self, x, t)
            outs.append(x.flatten()[:1] + t.float().flatten())
        return torch.cat(outs)


#: arguments that an op reads for their dtype or shape only (by position), written from the ops' documentation
_SHAPE_ARGS = {_aten.type_as.default: {1}, _aten.expand_as.default: {1}, _aten.view_as.default: {1},
               _aten.reshape_as.default: {1}, _aten.to.other: {1}, _aten.new_full.default: {0},
               _aten.new_zeros.default: {0}, _aten.new_ones.default: {0}, _aten.zeros_like.default: {0},
               _aten.ones_like.default: {0}, _aten.full_like.default: {0}}


def _constant_only_nodes(gm) -> list[str]:
    """Call nodes none of whose value inputs (shape-only arguments aside) carry the run-time input's values."""
    runtime = {n for n in gm.graph.nodes if n.op == "placeholder"}
    left = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        shape_args = _SHAPE_ARGS.get(node.target, set())
        value_inputs = [a for i, a in enumerate(node.args) if i not in shape_args]
        reads = {n for n in node.all_input_nodes if any(n is v or (isinstance(v, (list, tuple)) and n in v)
                                                        for v in [*value_inputs, *node.kwargs.values()])}
        if reads & runtime:
            runtime.add(node)
        elif node.target is not operator.getitem or node.args[0] not in runtime:
            left.append(f"{node.name}: {node.target}")
    return left


@pytest.mark.parametrize("seed", [0])
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(chains=st.lists(st.tuples(st.sampled_from(sorted(SOURCES)),
                                 st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4)),
                       min_size=3, max_size=3),
       h=st.integers(2, 5), w=st.integers(2, 5))
def test_compositions_of_shape_only_ops_fold_exactly(seed, chains, h, w):
    model = Program(chains, h, w).eval()
    g = torch.Generator().manual_seed(seed)
    example, other = (torch.randn(1, 3, h, w, generator=g) for _ in range(2))
    gm = torch.export.export(model, (example,), strict=False).module()
    folded = fold_constants(gm)
    assert _constant_only_nodes(folded) == [], folded.graph
    for x in (example, other, -other):
        torch.testing.assert_close(folded(x), model(x), rtol=0, atol=0)

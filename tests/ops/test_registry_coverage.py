"""Every operator registry entry has at least one delegated case and one rejected case in the table tests.

The tables are tests/ops/test_foundation_ops.py, test_table_ops.py and test_sdk_parity.py (delegated, compared with
PyTorch's quantized model) and test_table_rejections.py and test_sdk_parity.py (rejected, with the reason); this
file adds the cases those tables
lack, in the same two forms, and checks that the union covers the registry. A rejection may come from an entry's
own constraint or from the partitioner's checks every entry goes through (a 0-d tensor, constant-only inputs).
"""

import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness import Fn, assert_within_steps, lower_and_run

from executorch_neutron import lower
from executorch_neutron.ops import registry

HERE = Path(__file__).resolve().parent


def f(fn, *mods):
    return lambda: Fn(fn, *mods)


def x(*shape):
    return (torch.randn(*shape),)


class Consts(nn.Module):
    """`fn(self, *inputs)` with two constant matrices c1 (5x16) and c2 (16x8)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.register_buffer("c1", torch.randn(5, 16))
        self.register_buffer("c2", torch.randn(16, 8))

    def forward(self, *inputs):
        return self.fn(self, *inputs)


class AddMM(nn.Module):
    def __init__(self, k, n, beta):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) / k**0.5)
        self.b = nn.Parameter(torch.randn(n))
        self.beta = beta

    def forward(self, a):
        return torch.addmm(self.b, a, self.w, beta=self.beta)


# name: (model factory, inputs, expected delegated ops, run without the ATen passes)
DELEGATED = {
    "sub_4d": (f(lambda s, a, b: a - b), (torch.randn(1, 8, 5, 6), torch.randn(1, 8, 5, 6) * 2),
               {"aten.sub.Tensor": 1}, False),
    # the div->mul pass turns every constant division into a multiplication; without it div reaches the table
    "div_scalar_without_div_to_mul": (f(lambda s, a: a / 4.0), x(1, 8, 5, 6), {"aten.div.Tensor": 1}, True),
    # the no-op removal pass drops a clone; without it the clone reaches the edge graph as _clone_dim_order
    # |a| + 0.05: the calibration samples are normal, the logarithms need positive inputs
    "log2": (f(lambda s, a: torch.log2(a.abs() + 0.05)), x(3, 24),
             {"aten.abs.default": 1, "aten.add.Tensor": 1, "aten.log2.default": 1}, False),
    "log10": (f(lambda s, a: torch.log10(a.abs() + 0.05)), x(1, 6, 32),
              {"aten.abs.default": 1, "aten.add.Tensor": 1, "aten.log10.default": 1}, False),
    "clone_without_remove_noops": (f(lambda s, a: torch.relu(a).clone() * 2.0), x(1, 8, 5, 6),
                                   {"aten.relu.default": 1, "dim_order_ops._clone_dim_order.default": 1,
                                    "aten.mul.Tensor": 1}, True),
}

ZERO_D = "0-d (scalar) tensor"
# name: (model factory, inputs, rejected edge op, substring of the reason)
REJECTED = {
    # (an element, not a reduction: passes/reduce_all_keepdim.py carries a reduction's scalar as [1] through relu,
    # abs, neg, sigmoid and tanh, which then run on the NPU, but not through leaky_relu)
    "relu_0d": (f(lambda s, a: torch.relu(a[0, 1, 2, 3])), x(1, 8, 5, 6), "aten.relu.default", ZERO_D),
    "abs_0d": (f(lambda s, a: torch.abs(a[0, 1, 2, 3])), x(1, 8, 5, 6), "aten.abs.default", ZERO_D),
    "neg_0d": (f(lambda s, a: -(a[0, 1, 2, 3])), x(1, 8, 5, 6), "aten.neg.default", ZERO_D),
    "sigmoid_0d": (f(lambda s, a: torch.sigmoid(a[0, 1, 2, 3])), x(1, 8, 5, 6), "aten.sigmoid.default", ZERO_D),
    "tanh_0d": (f(lambda s, a: torch.tanh(a[0, 1, 2, 3])), x(1, 8, 5, 6), "aten.tanh.default", ZERO_D),
    "leaky_relu_0d": (f(lambda s, a: F.leaky_relu(a.mean(), 0.1)), x(1, 8, 5, 6), "aten.leaky_relu.default", ZERO_D),
    "hardswish_0d": (f(lambda s, a: F.hardswish(a.mean())), x(1, 8, 5, 6), "aten.hardswish.default", ZERO_D),
    "log2_0d": (f(lambda s, a: torch.log2(a.abs().mean() + 1.0)), x(1, 8, 5, 6), "aten.log2.default", ZERO_D),
    "log10_0d": (f(lambda s, a: torch.log10(a.abs().mean() + 1.0)), x(1, 8, 5, 6), "aten.log10.default", ZERO_D),
    "view_0d": (f(lambda s, a: F.leaky_relu(a.mean(), 0.1).reshape(1)), x(1, 8, 5, 6), "aten.view_copy.default", ZERO_D),
    "unsqueeze_0d": (f(lambda s, a: (a.mean() * 2.0).unsqueeze(0)), x(1, 8, 5, 6), "aten.unsqueeze_copy.default",
                     ZERO_D),
    "linear_runtime_weights": (f(lambda s, a, w: F.linear(a, w)), (torch.randn(2, 16), torch.randn(8, 16)),
                               "aten.linear.default", "not a constant int8"),
    # passes/fold_constants.py folds it; without that pass (QAT keeps computations on parameters, and results over
    # FOLD_MAX_ELEMENTS are not folded) the partitioner leaves it on the CPU
    "mm_constants_only_without_fold": (lambda: Consts(lambda s, a: torch.mm(s.c1, s.c2) + a), x(5, 8),
                                       "aten.mm.default", "constants only"),
    "addmm_beta": (lambda: AddMM(16, 8, 0.5), x(5, 16), "aten.addmm.default", "beta 0.5"),
    # passes/add_alpha_to_mul.py writes the scaling as a multiplication; without it the partitioner names alpha
    "sub_alpha_without_rewrite": (f(lambda s, a, b: torch.sub(a, b, alpha=2)),
                                  (torch.randn(1, 8, 5, 6), torch.randn(1, 8, 5, 6)), "aten.sub.Tensor", "alpha 2"),
}

#: registry entries no export produces today (so no case can reach them), with the reason
UNREACHABLE = {
    "aten.max_pool2d.default": "the edge dialect decomposes max_pool2d into max_pool2d_with_indices, and no "
                               "partitioner or compile config here keeps it whole",
}


@pytest.mark.parametrize("case", DELEGATED.values(), ids=DELEGATED.keys())
def test_delegated_case(case, monkeypatch):
    make, inputs, expected_ops, without_passes = case
    if without_passes:
        from executorch_neutron.passes import pipeline

        monkeypatch.setattr(pipeline, "PIPELINE", ())
    torch.manual_seed(0)
    r = lower_and_run(make().eval(), inputs)
    assert r.delegated_ops == expected_ops, str(r.result.report)
    for out, ref, scale in zip(r.outputs, r.references, r.output_scales):
        assert_within_steps(out, ref, 1, scale)


#: rejected cases lowered without the pass that would rewrite them
WITHOUT_PASS = {"mm_constants_only_without_fold": "fold_constants", "sub_alpha_without_rewrite": "add_alpha_to_mul"}


@pytest.mark.parametrize("name", list(REJECTED))
def test_rejected_case(name, monkeypatch):
    make, inputs, op, needle = REJECTED[name]
    if name in WITHOUT_PASS:
        from executorch_neutron.passes import pipeline

        monkeypatch.setattr(pipeline, "PIPELINE", tuple(s for s in pipeline.PIPELINE if s.name != WITHOUT_PASS[name]))
    torch.manual_seed(0)
    r = lower(make().eval(), inputs, [inputs])
    mine = [j for j in r.report.rejections if j.op == op]
    assert mine, f"{op} not rejected:\n{r.report}"
    assert any(needle in j.reason for j in mine), "\n".join(j.reason for j in mine)
    assert op not in r.report.delegated_ops


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"_coverage_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table(name: str) -> dict:
    return _module(name).CASES


def _entries() -> list[tuple[str, ...]]:
    """The registry's entries, each as the edge op names it is registered for."""
    registry.entries()  # loads every op family
    by_entry: dict[int, list[str]] = {}
    for key, entry in registry.REGISTRY.items():
        by_entry.setdefault(id(entry), []).append(registry.op_name(key))
    return [tuple(names) for names in by_entry.values()]


def test_every_registry_entry_has_a_delegated_and_a_rejected_case():
    parity = _module("test_sdk_parity")  # sdk-current: delegated cases, refusals, and what `documented` refuses
    delegated = set()
    for cases in (_table("test_foundation_ops"), _table("test_table_ops"), parity.CASES, DELEGATED):
        for case in cases.values():
            delegated |= set(case[2] or ())
    rejected = {case[2] for case in list(_table("test_table_rejections").values()) + list(REJECTED.values())
                + list(parity.REFUSED.values())}
    rejected |= {next(iter(parity.CASES[name][2])) for name in parity.DOCUMENTED_REFUSES}
    entries = [names for names in _entries() if not set(names) & set(UNREACHABLE)]
    missing = [n for n in entries if not set(n) & delegated]
    assert not missing, f"entries without a delegated case: {missing}"
    missing = [n for n in entries if not set(n) & rejected]
    assert not missing, f"entries without a rejected case: {missing}"

"""The one pass pipeline (passes/pipeline.py): every pass module is one step, named once, with a reason for its
place; conditions are data (a step whose ops the target's table lacks does not run; QAT reaches the pass that asks)."""

from pathlib import Path

import pytest
import torch
from torch import nn

from executorch_neutron.passes import PIPELINE, PassContext, run_passes
from harness import Fn

PASSES_DIR = Path(__file__).resolve().parents[2] / "src" / "executorch_neutron" / "passes"
NOT_PASSES = {"__init__", "pipeline", "fx_utils"}


def test_every_pass_module_is_one_step():
    modules = {p.stem for p in PASSES_DIR.glob("*.py")} - NOT_PASSES
    names = [s.name for s in PIPELINE]
    assert len(names) == len(set(names)), f"a pass listed twice: {names}"
    assert set(names) == modules, f"pass modules without a step: {modules - set(names)}; steps without a module: " \
                                  f"{set(names) - modules}"
    assert all(s.order.strip() for s in PIPELINE)


def _aten_ops(gm) -> set[str]:
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


def _layer_norm_graph():
    model = nn.Sequential(nn.Linear(12, 12), nn.LayerNorm(12)).eval()
    return torch.export.export(model, (torch.randn(2, 5, 12),), strict=False).module()


def test_a_step_whose_ops_the_table_lacks_does_not_run():
    # NXP's documented table has no rsqrt: layer norm stays one op there, and becomes int8 pieces under sdk-current
    kept = run_passes(_layer_norm_graph(), PassContext(profile="documented"))
    rewritten = run_passes(_layer_norm_graph(), PassContext(profile="sdk-current"))
    assert "aten.layer_norm.default" in _aten_ops(kept)
    assert "aten.layer_norm.default" not in _aten_ops(rewritten) and "aten.rsqrt.default" in _aten_ops(rewritten)


class _ScaledByParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return x * (self.w * 2.0)  # a computation on a parameter only


def test_qat_keeps_computations_on_parameters():
    gm = lambda: torch.export.export(_ScaledByParameter(), (torch.randn(3, 4),), strict=False).module()  # noqa: E731
    ptq, qat = run_passes(gm(), PassContext(is_qat=False)), run_passes(gm(), PassContext(is_qat=True))
    assert sum(n.target == torch.ops.aten.mul.Tensor for n in ptq.graph.nodes) == 1  # w * 2 folded
    assert sum(n.target == torch.ops.aten.mul.Tensor for n in qat.graph.nodes) == 2  # trained later: kept


_DECOMPOSED = {  # layer -> the op it exports as (rewritten from exp / log / sub / rsqrt, none in NXP's documented table)
    "softplus": (nn.Softplus(), "aten.softplus.default"), "mish": (nn.Mish(), "aten.mish.default"),
    "selu": (nn.SELU(), "aten.selu.default"), "celu": (nn.CELU(0.5), "aten.celu.default"),
    "instance_norm": (nn.InstanceNorm2d(3), "aten.instance_norm.default"),
    "layer_norm_hw": (nn.LayerNorm([4, 5]), "aten.layer_norm.default"),
    "var": (Fn(lambda s, a: a.var(-1)), "aten.var.dim"),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", _DECOMPOSED)
def test_decompositions_run_only_where_the_table_has_their_ops(name):
    model, op = _DECOMPOSED[name]
    graph = lambda: torch.export.export(model.eval(), (torch.randn(2, 3, 4, 5),), strict=False).module()  # noqa: E731
    assert op in _aten_ops(run_passes(graph(), PassContext(profile="documented")))
    assert op not in _aten_ops(run_passes(graph(), PassContext(profile="sdk-current")))

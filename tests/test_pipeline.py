"""pipeline.py: lower() and the export recipes take their stages from one assembly and resolve `spec` vs
`target` by one rule; lower() fills the report's .pte size; compare() runs each partition once per sample."""

import pytest
import torch
from torch import nn

from harness import Fn

from executorch_neutron import NeutronCompileSpec, compare, lower
from executorch_neutron.lowering import LoweringError
from executorch_neutron.pipeline import assemble, resolve_spec
from executorch_neutron.recipes import neutron_recipe

# name: (target, spec, expected target, or the error's text)
RESOLUTION = {
    "default": (None, None, "imxrt700"),
    "target_only": ("imxrt700cm", None, "imxrt700cm"),
    "spec_only": (None, NeutronCompileSpec(target="mcxn94x"), "mcxn94x"),
    "same_in_both": ("IMX95", NeutronCompileSpec(target="imx95"), "imx95"),
    "conflict": ("imx95", NeutronCompileSpec(target="imxrt700"), "conflicts with spec.target"),
}


@pytest.mark.parametrize("case", RESOLUTION.values(), ids=RESOLUTION.keys())
def test_lower_and_recipe_resolve_spec_and_target_alike(case):
    target, spec, expected = case
    if "conflicts" in expected:
        with pytest.raises(LoweringError, match=expected):
            resolve_spec(target, spec)
        with pytest.raises(LoweringError, match=expected):
            neutron_recipe(target, spec=spec)
        with pytest.raises(LoweringError, match=expected):
            lower(nn.ReLU(), (torch.randn(1, 8),), target=target, spec=spec)
        return
    assert resolve_spec(target, spec).target == expected
    assert neutron_recipe(target, spec=spec).name == f"neutron_ptq_int8_{expected}"


def test_excluded_operators_have_one_spelling():
    spec = resolve_spec("imxrt700", operators_not_to_delegate=("aten::convolution", "aten.relu.default"))
    assert spec.operators_not_to_delegate == ("aten.convolution", "aten.relu")
    with pytest.raises(LoweringError, match="unknown operator 'aten.frobnicate'"):
        resolve_spec(operators_not_to_delegate=("aten.frobnicate",))


# name: (target, has a Cortex-M step)
ASSEMBLIES = {"imxrt700": ("imxrt700", False), "imxrt700cm": ("imxrt700cm", True)}


@pytest.mark.parametrize("case", ASSEMBLIES.values(), ids=ASSEMBLIES.keys())
def test_assembly_per_target(case):
    target, cortex_m = case
    pipeline = assemble(resolve_spec(target))
    assert type(pipeline.quantizer).__name__ == ("NeutronCortexMQuantizer" if cortex_m else "NeutronQuantizer")
    assert pipeline.partitioner.compile_spec.target == target
    assert bool(pipeline.cortex_m_core) is cortex_m and len(pipeline.edge_transforms()) == 1 + cortex_m  # + fold
    assert (pipeline.edge_compile_config is not None) is cortex_m


def _two_partitions():
    model = Fn(lambda s, a: s.mods[1](torch.tanh(s.mods[0](a))), nn.Conv2d(3, 8, 3), nn.Conv2d(8, 16, 1))
    return model.eval(), (torch.randn(1, 3, 9, 7),)


def test_lower_fills_the_pte_size():
    torch.manual_seed(0)
    model, inputs = _two_partitions()
    result = lower(model, inputs, [inputs])
    assert result.report.pte_bytes == len(result.pte)
    assert result.report.to_dict()["totals"]["pte_bytes"] == len(result.pte)


def test_compare_runs_each_partition_once_per_sample(monkeypatch):
    import executorch_neutron.runtime.executor as executor

    calls = []
    real = executor.run_reference_payload
    monkeypatch.setattr(executor, "run_reference_payload",
                        lambda *a, **k: calls.append(bool(k.get("rounding_once"))) or real(*a, **k))
    torch.manual_seed(0)
    model, inputs = _two_partitions()
    samples = [(torch.randn(1, 3, 9, 7),) for _ in range(3)]
    result = lower(model, inputs, samples, operators_not_to_delegate=("aten.tanh.default",))
    r = compare(model, result=result, samples=samples)
    assert len(result.report.partitions) == 2 and len(r.partitions) == 2
    assert calls.count(False) == 2 * len(samples)  # the reference kernels
    assert calls.count(True) == 2 * len(samples)  # and the same TFLite requantizing once
    assert all(p.ops for p in r.partitions)  # the per-op rows come from the same runs

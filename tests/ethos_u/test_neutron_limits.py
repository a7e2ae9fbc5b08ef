"""Ethos-U targets are limited by Vela, not by Neutron: the registry's Neutron hardware and SDK limits
(`backends=NEUTRON`) and the constraint profiles do not apply to them; Vela's own limits do.

References are independent of our code: Vela itself (ExecuTorch's `arm_vela.vela_compile`, whose raw output refuses
any operator Vela would put on the CPU) for what the NPU runs, PyTorch's quantized model (`convert_pt2e`) for the
numbers (within 1 output quantization step: each case is one operator), and the same cases on imxrt700 for
"Neutron targets unchanged".
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest
import torch

from executorch_neutron import backends, lower
from executorch_neutron.ethos_u import constraints as vela_limits
from executorch_neutron.models import zoo
from executorch_neutron.neutron.constraints import NEUTRON
from executorch_neutron.ops import registry
from executorch_neutron.runtime import run
from harness import assert_within_steps, model_output_qparams, quantize_np
from ethos_u.neutron_limit_cases import DELEGATED, LAST_DIM, REFUSED, VELA_INLINE_ACCEPTED

NEUTRON_WORD = re.compile(r"\bNeutron\b")  # the NPU; NeutronQuantizer, the quantizer's class name, may appear


def _lower(case, target: str, **options):
    torch.manual_seed(0)
    model = case.make().eval()
    inputs = (torch.randn(*case.shape),)
    with contextlib.redirect_stdout(io.StringIO()):
        result = lower(model, inputs, [inputs] + zoo.calibration(inputs, 3), target=target,
                       constraints=case.constraints, **options)
    return result, inputs


def _vela_accepts(tflite: bytes, flags) -> bool:
    from executorch.backends.arm.arm_vela import vela_compile

    with contextlib.redirect_stdout(io.StringIO()):
        try:
            vela_compile(tflite, list(flags))
        except Exception:  # noqa: BLE001 - raw output refuses CPU operators (RuntimeError), or Vela fails
            return False
    return True


def _assert_on_vela_within_one_step(case, tmp_path):
    result, inputs = _lower(case, "ethos-u55-128", intermediates_dir=tmp_path)
    report = result.report
    assert not [r for r in report.rejections if r.op == case.op], str(report)
    _assert_no_neutron_reason(report)
    assert report.partitions and all(
        _vela_accepts((tmp_path / f"{p.tag}.tflite").read_bytes(), report.partitions[0].backend["vela_flags"]) for p in report.partitions)
    host = run(result.pte, inputs)[0].numpy()
    with torch.no_grad():
        ref = result.quantized_model(*inputs).numpy()
    scale, zp = model_output_qparams(result.quantized_model)[0]
    assert_within_steps(quantize_np(host, scale, zp), quantize_np(ref, scale, zp), 1, scale)


@pytest.mark.parametrize("case", DELEGATED.values(), ids=DELEGATED.keys())
def test_neutron_limit_does_not_refuse_on_ethos_u(case, tmp_path):
    _assert_on_vela_within_one_step(case, tmp_path)
    # ... and the Neutron target still refuses it, with its Neutron reason
    neutron, _ = _lower(case, "imxrt700")
    reasons = [r for r in neutron.report.rejections if r.op == case.op]
    assert reasons and reasons[0].npu == "Neutron", str(neutron.report)


@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_vela_limit_refuses_with_vela_reason(case, tmp_path, monkeypatch):
    # Vela itself puts the operator on the CPU: the TFLite of the node, lowered with Vela's limits switched off
    from executorch_neutron.ethos_u import VelaError

    with monkeypatch.context() as m:
        _without_vela_limits(m)
        with pytest.raises(VelaError, match="on the CPU|could not run on NPU|passthrough/CPU operations"):
            _lower(case, "ethos-u55-128")
    result, _ = _lower(case, "ethos-u55-128")
    reasons = [r for r in result.report.rejections if r.op == case.op]
    rules = [c.text for _, c in vela_limits.LIMITS]  # "<what was found>: <Vela's rule>"
    assert reasons and case.ethos_u in reasons[0].reason, str(result.report)
    assert any(reasons[0].reason.endswith(f": {rule}") for rule in rules), reasons[0].reason
    _assert_no_neutron_reason(result.report)


@pytest.mark.parametrize("case", VELA_INLINE_ACCEPTED.values(), ids=VELA_INLINE_ACCEPTED.keys())
def test_last_accepted_case_of_an_inline_vela_limit_runs_on_vela(case, tmp_path):
    """Vela's limits are read from Vela's own tables where it has them (ethos_u/constraints.py); the three it
    checks inline are held against Vela here: the last accepted case compiles (and the first refused one, in
    REFUSED, is refused by Vela itself)."""
    _assert_on_vela_within_one_step(case, tmp_path)


@pytest.mark.parametrize("case", LAST_DIM.values(), ids=LAST_DIM.keys())
def test_reduction_over_the_last_dim_runs_on_vela(case, tmp_path):
    """Vela compiles every partition (its raw output refuses a CPU operator) and the host run is within 1 step."""
    _assert_on_vela_within_one_step(case, tmp_path)


def _without_vela_limits(monkeypatch):
    """The operator registry without the constraints the Ethos-U back end added (Vela's limits)."""
    import dataclasses

    added = [c for _, c in vela_limits.LIMITS]
    stripped, table = {}, {}
    for key, entry in registry.REGISTRY.items():
        if id(entry) not in stripped:
            kept = tuple(c for c in entry.constraints if not any(c is a for a in added))
            stripped[id(entry)] = dataclasses.replace(entry, constraints=kept)
        table[key] = stripped[id(entry)]
    monkeypatch.setattr(registry, "REGISTRY", table)


def _assert_no_neutron_reason(report):
    for r in report.rejections:
        assert r.npu == "Ethos-U" and not NEUTRON_WORD.search(r.message()), r.message()


def test_generic_reasons_name_the_ethos_u():
    """The generic rules (no kernel, float input, ...) name the target's NPU too."""
    from harness import Fn

    model = Fn(lambda self, x: torch.floor(self.mods[0](x) * 4.0), torch.nn.Conv2d(3, 5, 3)).eval()
    inputs = (torch.randn(1, 3, 8, 11),)
    with contextlib.redirect_stdout(io.StringIO()):
        report = lower(model, inputs, [inputs], target="imx93", embed_reference=False).report
    assert any(r.op == "aten.floor.default" and "no Ethos-U kernel" in r.reason for r in report.rejections), \
        str(report)
    _assert_no_neutron_reason(report)


def test_documented_only_constraints_are_neutron_only():
    """The documented table is Neutron's: a constraint in it alone limits Neutron targets only."""
    backends.register_limits()
    for entry in registry.entries():
        for c in entry.constraints:
            if c.profiles == frozenset({"documented"}):
                assert c.backends == NEUTRON, (entry.name, c.text)


def test_applies_decides_by_backend_and_profile():
    neutron_only = registry.Constraint("x", lambda a, ctx: None, backends=NEUTRON)
    documented = registry.Constraint("y", lambda a, ctx: None, profiles=frozenset({"documented"}))
    assert neutron_only.applies("neutron", "sdk-current") and not neutron_only.applies("ethos-u", "sdk-current")
    assert documented.applies("neutron", "documented") and not documented.applies("neutron", "sdk-current")
    assert documented.applies("ethos-u", "sdk-current")  # profiles are Neutron's tables: not a filter for Ethos-U
    with pytest.raises(ValueError, match="backends"):
        registry.Constraint("z", lambda a, ctx: None, backends=frozenset({"hexagon"}))

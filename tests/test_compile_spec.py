"""NeutronCompileSpec: every option round-trips through ExecuTorch's CompileSpec list; targets are validated."""

import pytest

from executorch_neutron import NeutronCompileSpec, get_target
from executorch_neutron.target import TARGETS

pytestmark = pytest.mark.fast


def test_defaults_round_trip():
    spec = NeutronCompileSpec()
    assert spec.use_neutron_for_format_conversion is True
    assert NeutronCompileSpec.from_compile_specs(spec.to_compile_specs()) == spec


def test_every_option_round_trips():
    spec = NeutronCompileSpec(
        target="IMXRT700", extra_flags="--foo 1", operators_not_to_delegate=["aten::convolution", "aten.mul.Tensor"],
        use_neutron_for_format_conversion=False, fetch_constants_to_sram=True, dump_kernel_selection_code=True,
        intermediates_dir="out/x", use_profiling=True, reference=True, custom_delegation_options=("a",),
    )
    assert spec.target == "imxrt700"
    back = NeutronCompileSpec.from_compile_specs(spec.to_compile_specs())
    assert back == spec
    assert [c.key for c in spec.to_compile_specs()][0] == "neutron.target"


def test_unknown_compile_spec_key_is_an_error():
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    with pytest.raises(ValueError, match="neutron.bogus"):
        NeutronCompileSpec.from_compile_specs([CompileSpec("neutron.bogus", b"1")])


def test_imxrt700_facts():
    t = get_target("imxrt700")
    assert (t.num_macs, t.subsystem, t.hw_version) == (8, False, "N3")
    assert set(TARGETS) == {"imxrt700", "imxrt700cm", "mcxn94x", "imx95"}


def test_imxrt700cm_is_imxrt700_plus_its_cortex_m33():
    """Same NPU facts and converter target as imxrt700; leftovers go to the Cortex-M33."""
    base, cm = get_target("imxrt700"), get_target("imxrt700cm")
    npu_fields = ("soc", "npu", "subsystem", "num_units", "num_pipes", "num_macs", "hw_version", "sram_bytes", "cpu")
    assert all(getattr(base, f) == getattr(cm, f) for f in npu_fields)
    assert (base.cortex_m, cm.cortex_m) == (None, "cortex-m33")
    assert (base.converter_target, cm.converter_target) == ("imxrt700", "imxrt700")
    assert NeutronCompileSpec(target="imxrt700cm").target == "imxrt700cm"

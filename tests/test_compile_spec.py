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


@pytest.mark.parametrize("target, options, owner", [
    ("imx93", {"use_profiling": True}, "Neutron"),
    ("ethos-u55-128", {"fetch_constants_to_sram": True, "reference": True}, "Neutron"),
    ("imxrt700", {"embed_reference": False}, "Ethos-U"),
    ("mcxn94x", {"memory_mode": "Shared_Sram"}, "Ethos-U"),
])
def test_an_option_of_another_back_end_is_refused(target, options, owner):
    """Each option belongs to the front end or to one back end (compile_spec.py's field metadata); given to a
    target of another back end it would have no effect, so the spec refuses it and names the options."""
    with pytest.raises(ValueError, match=f"apply to {owner} targets only") as err:
        NeutronCompileSpec(target=target, **options)
    assert all(name in str(err.value) for name in options)


def test_each_back_end_reads_its_view():
    """The views (neutron/options.py, ethos_u/options.py) carry what each back end reads, taken from the spec."""
    from executorch_neutron.ethos_u.options import EthosUOptions
    from executorch_neutron.neutron.options import NeutronOptions

    neutron = NeutronOptions.of(NeutronCompileSpec(target="mcxn94x", use_profiling=True, extra_flags="--x=1"))
    assert (neutron.converter_target, neutron.use_profiling) == (get_target("mcxn94x").converter_target, True)
    assert neutron.unused_without_converter() == ("extra_flags", "use_profiling")
    vela = EthosUOptions.of(NeutronCompileSpec(target="ethos-u85-256", memory_mode="Dedicated_Sram",
                                               extra_flags="--optimise=Size"))
    assert "--memory-mode=Dedicated_Sram" in vela.vela_flags and vela.vela_flags[-1] == "--optimise=Size"
    assert vela.target.memory_mode == "Dedicated_Sram" and vela.embed_reference is True

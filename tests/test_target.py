"""target.py: the targets are data with NXP's published figures, looked up by name the one way."""

import dataclasses

import pytest

from executorch_neutron.target import TARGETS, NeutronTarget, UnknownTargetError, get_target

pytestmark = pytest.mark.fast

# name: (num_macs, subsystem, hardware version, Cortex-M core for the leftovers): NXP's eIQ Neutron documents
FIGURES = {
    "imxrt700": (8, False, "N3", None),
    "imxrt700cm": (8, False, "N3", "cortex-m33"),
    "mcxn94x": (8, False, "N1", None),
    "imx95": (16, True, "N3", None),
}


@pytest.mark.parametrize("name", FIGURES, ids=FIGURES.keys())
def test_target_figures(name):
    t = get_target(name)
    assert (t.num_macs, t.subsystem, t.hw_version, t.cortex_m) == FIGURES[name]
    assert t.name == name


def test_every_target_is_in_the_table():
    assert set(TARGETS) == set(FIGURES)


@pytest.mark.parametrize("spelling", ["IMXRT700", " imxrt700 ", "iMXrt700"])
def test_lookup_ignores_case_and_spaces(spelling):
    assert get_target(spelling) is TARGETS["imxrt700"]


def test_a_target_object_passes_through():
    own = dataclasses.replace(TARGETS["imxrt700"], name="my_board", sram_bytes=1024)
    assert get_target(own) is own and isinstance(own, NeutronTarget)


def test_unknown_target_names_the_valid_ones():
    with pytest.raises(UnknownTargetError) as err:
        get_target("imx8")
    assert "'imx8'" in str(err.value) and all(name in str(err.value) for name in TARGETS)


def test_target_names_in_natural_order():
    from executorch_neutron.target import all_target_names

    names = [n for n in all_target_names() if n.startswith("ethos-u85-")]
    assert [int(n.rsplit("-", 1)[1]) for n in names] == [128, 256, 512, 1024, 2048]


def test_a_misspelt_target_gets_a_suggestion():
    import pytest

    from executorch_neutron.target import UnknownTargetError, get_target

    with pytest.raises(UnknownTargetError, match=r"did you mean 'ethos-u55-128'\?"):
        get_target("ethos-u55-12")

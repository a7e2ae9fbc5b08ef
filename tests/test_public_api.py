"""Every name the package exports (`executorch_neutron.__all__`) imports: the lazy table points at real modules."""

import importlib

import pytest

import executorch_neutron


@pytest.mark.parametrize("name", executorch_neutron.__all__)
def test_every_exported_name_imports(name):
    value = getattr(executorch_neutron, name)
    assert value is not None
    # `from executorch_neutron import X` goes through the same module __getattr__
    assert getattr(importlib.import_module("executorch_neutron"), name) is value


def test_backend_class_is_the_one_executorch_finds():
    from executorch_neutron import NeutronBackend
    from executorch_neutron.neutron.backend import BACKEND_ID

    assert NeutronBackend.__name__ == BACKEND_ID

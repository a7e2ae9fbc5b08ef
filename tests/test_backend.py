"""backend.py: the delegate id is the backend class's name, the same in the .pte, the partitioner and the host
library that executes it."""

import torch
from executorch.exir._serialize._program import deserialize_pte_binary
from torch import nn

from executorch_neutron import lower
from executorch_neutron.neutron.backend import BACKEND_ID, NeutronBackend
from executorch_neutron import NeutronPartitioner


def test_backend_id_is_the_class_name():
    assert BACKEND_ID == NeutronBackend.__name__ == "NeutronBackend"
    assert NeutronPartitioner().delegation_spec.backend_id == BACKEND_ID


def test_host_library_registers_the_same_id():
    from executorch.runtime import Runtime

    from executorch_neutron.runtime import bridge

    bridge.ensure_registered()
    registry = Runtime.get().backend_registry
    assert registry.registered_backend_names.count(BACKEND_ID) == 1 and registry.is_available(BACKEND_ID)


def test_delegates_in_the_pte_carry_the_id():
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 8, 6),)
    pte = lower(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).eval(), inputs, [inputs]).pte
    plans = deserialize_pte_binary(pte).program.execution_plan
    assert [d.id for plan in plans for d in plan.delegates] == [BACKEND_ID]

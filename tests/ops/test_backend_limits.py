"""Each back end's own limits are registered in one place (backends.register_limits), not by importing its folder;
each is written once, and a rejection reads "<what was found>: <the rule's text>"."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from executorch_neutron import backends
from executorch_neutron.ethos_u import constraints as vela
from executorch_neutron.neutron import constraints as neutron
from executorch_neutron.ops import registry
from executorch_neutron.target import BACKEND_KINDS, get_target

pytestmark = pytest.mark.fast

SRC = str(Path(__file__).resolve().parents[2] / "src")

_STATES = """
from executorch_neutron.ops import registry


def state():
    return (len(registry.ADDED), sum(len(e.constraints) for e in registry.entries()), len(registry.NO_KERNEL))


print(state())
import executorch_neutron.ethos_u, executorch_neutron.ethos_u.constraints, executorch_neutron.ethos_u.partitioner
import executorch_neutron.neutron, executorch_neutron.neutron.constraints, executorch_neutron.neutron.partitioner
print(state())
import executorch_neutron.backends
print(state())
"""


def test_importing_a_back_end_does_not_change_the_registry():
    """In a fresh process: the registry as ops/ fills it, after importing both back ends' folders (the same), after
    importing the back-end table (each back end's limits and no-kernel reasons added)."""
    out = subprocess.run([sys.executable, "-c", _STATES], env={"PYTHONPATH": SRC, "PATH": ""}, capture_output=True,
                         text=True, check=True).stdout
    front, imported, registered = out.splitlines()
    assert imported == front
    assert registered != front and registered.startswith(f"({len(registry.ADDED)}, "), (front, registered)


def test_register_limits_is_idempotent_and_in_one_order():
    backends.register_limits()
    before = ([id(c) for _, c in registry.ADDED], [e.constraints for e in registry.entries()],
              {op: dict(r) for op, r in registry.NO_KERNEL.items()})
    backends.register_limits()
    neutron.register()
    vela.register()
    assert ([id(c) for _, c in registry.ADDED], [e.constraints for e in registry.entries()],
            {op: dict(r) for op, r in registry.NO_KERNEL.items()}) == before
    added = [c for _, c in registry.ADDED]
    assert added == [c for _, c in neutron.LIMITS] + [c for _, c in vela.LIMITS]  # Neutron's, then Vela's


def test_each_limit_is_written_once():
    backends.register_limits()
    texts = Counter((c.text, c.backends) for _, c in registry.ADDED)
    assert all(n == 1 for n in texts.values()), [t for t, n in texts.items() if n > 1]
    own = {c.text for _, c in registry.ADDED}
    front = {c.text for e in registry.entries() for c in e.constraints if c.backends == registry.ALL_BACKENDS}
    assert not own & front
    with pytest.raises(ValueError, match="written twice"):
        _, c = neutron.LIMITS[0]
        registry.add_constraint(neutron.LIMITS[0].ops, registry.Constraint(c.text, c.check, backends=c.backends))


def test_every_op_without_a_kernel_has_a_reason_for_every_back_end():
    backends.register_limits()
    missing = {registry.op_name(op): sorted(set(BACKEND_KINDS) - set(r)) for op, r in registry.NO_KERNEL.items()
               if set(r) != set(BACKEND_KINDS)}
    assert not missing


def test_reason_is_what_was_found_then_the_rule():
    c = registry.Constraint("channels % {num_macs} == 0", lambda a, ctx: "channels 6")
    assert c.reason("channels 6") == "channels 6: channels % num_macs == 0"
    target = get_target("imxrt700")
    assert c.reason("channels 6", target) == f"channels 6: channels % {target.num_macs} == 0"


def test_a_neutron_limit_names_whole_entries():
    """A Neutron limit checks every node of the entries it is added to (the ATen node of a preserved op too), so
    its ops must be all of those entries' ops."""
    backends.register_limits()
    for ops, c in neutron.LIMITS:
        entries = {id(registry.lookup(op)): registry.lookup(op) for op in ops}
        assert ops == {t for e in entries.values() for t in e.targets}, c.text

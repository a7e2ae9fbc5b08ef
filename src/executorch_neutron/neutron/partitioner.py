"""NeutronPartitioner: the neutral base partitioner (partition/) delegating to `NeutronBackend`.

Everything it decides comes from the operator registry with the target's kind ("neutron") and the spec's
constraint profile, Neutron's own limits included (constraints.py, added when the partitioner is made, as
backends.register_limits adds them); this class only names the delegate id and the partition tags (neutron_0,
neutron_1, ...).
"""

from __future__ import annotations

from typing import Sequence

from executorch.exir.backend.compile_spec_schema import CompileSpec

from ..compile_spec import NeutronCompileSpec
from ..partition import BasePartitioner
from . import constraints
from .backend import BACKEND_ID


class NeutronPartitioner(BasePartitioner):
    backend_id = BACKEND_ID
    tag_prefix = "neutron"

    def __init__(self, spec: NeutronCompileSpec | Sequence[CompileSpec] | None = None, **options) -> None:
        super().__init__(spec, **options)
        constraints.register()  # idempotent: the registry has Neutron's limits whoever made this partitioner

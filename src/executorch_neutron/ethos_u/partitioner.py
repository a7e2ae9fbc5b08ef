"""EthosUPartitioner: the neutral base partitioner (partition/) delegating to `EthosUBackend`.

The registry's checks run with the target's back end, "ethos-u": its structural constraints apply, its Neutron
hardware and SDK limits and the constraint profiles (Neutron's operator tables) do not, and Vela's limits
(constraints.py, added to the registry tagged for this back end when the partitioner is made, as
backends.register_limits adds them) do (`Constraint.applies`). A node Vela
would leave on the CPU thus stays on the CPU with Vela's reason, so every partition compiles to a raw Ethos-U
payload. The delegate's backend id is `EthosUBackend`, the class
whose preprocess lowers the partitions (backend.py).
"""

from __future__ import annotations

from typing import Sequence

from executorch.exir.backend.compile_spec_schema import CompileSpec

from ..compile_spec import NeutronCompileSpec
from ..partition import BasePartitioner
from ..target import ETHOS_U
from . import constraints
from .backend import EthosUBackend, claim_backend_id


class EthosUPartitioner(BasePartitioner):
    backend_id = EthosUBackend.__name__
    tag_prefix = "ethos_u"

    def __init__(self, spec: NeutronCompileSpec | Sequence[CompileSpec] | None = None, **options) -> None:
        super().__init__(spec, **options)
        if self.compile_spec.target_info.kind != ETHOS_U:
            raise ValueError(f"EthosUPartitioner needs an Ethos-U target, got {self.compile_spec.target!r}; use "
                             f"NeutronPartitioner for Neutron targets")
        if not self.compile_spec.use_neutron_for_format_conversion:
            raise ValueError("use_neutron_for_format_conversion=False is not available for Ethos-U targets: the "
                             "Ethos-U runtime does no layout conversion, so the partitions convert NCHW<->NHWC "
                             "on the NPU; leave it True")
        constraints.register()  # idempotent: the registry has Vela's limits whoever made this partitioner

    def partition(self, exported_program):
        claim_backend_id()  # ExecuTorch looks the backend up by name; Arm's class of that name may be loaded
        return super().partition(exported_program)

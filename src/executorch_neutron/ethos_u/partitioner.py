"""EthosUPartitioner: the shared partitioner (operator registry, int8 boundaries) plus Vela's own limits.

The registry's checks run with the target's back end, "ethos-u": its structural constraints apply, its Neutron
hardware and SDK limits and the constraint profiles (Neutron's operator tables) do not (`Constraint.applies`).

A node the registry accepts but Vela would leave on the CPU (constraints.py) stays on the CPU with Vela's reason,
so every partition compiles to a raw Ethos-U payload. The delegate's backend id is `EthosUBackend`, the class
whose preprocess lowers the partitions (backend.py).
"""

from __future__ import annotations

from typing import Sequence

from executorch.exir.backend.compile_spec_schema import CompileSpec

from ..compile_spec import NeutronCompileSpec
from ..ops import registry
from ..partition import NeutronPartitioner
from ..partition.support import Rejection, decide
from .backend import EthosUBackend, claim_backend_id
from .constraints import vela_rejection


class EthosUPartitioner(NeutronPartitioner):
    backend_id = EthosUBackend.__name__
    tag_prefix = "ethos_u"

    def __init__(self, spec: NeutronCompileSpec | Sequence[CompileSpec] | None = None, **options) -> None:
        super().__init__(spec, **options)
        if not self.neutron_spec.is_ethos_u:
            raise ValueError(f"EthosUPartitioner needs an Ethos-U target, got {self.neutron_spec.target!r}; use "
                             f"NeutronPartitioner for Neutron targets")
        if not self.neutron_spec.use_neutron_for_format_conversion:
            raise ValueError("use_neutron_for_format_conversion=False is not available for Ethos-U targets: the "
                             "Ethos-U runtime does no layout conversion, so the partitions convert NCHW<->NHWC "
                             "on the NPU; leave it True")

    def partition(self, exported_program):
        claim_backend_id()  # ExecuTorch looks the backend up by name; Arm's class of that name may be loaded
        return super().partition(exported_program)

    def _decide(self, graph, ctx) -> dict:
        return decide(graph, ctx, extra=_vela_limits)


def _vela_limits(node) -> Rejection | None:
    reason = vela_rejection(node)
    return Rejection(node.name, registry.op_name(node.target), reason, npu="Ethos-U") if reason else None

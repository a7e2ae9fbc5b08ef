"""Which back end lowers for a target: the one place that maps a compile spec to its partitioner.

Neutron targets go to `NeutronPartitioner` (NeutronBackend), Ethos-U targets to `EthosUPartitioner`
(EthosUBackend, through Vela). lower(), the recipes and the CLI all ask here.
"""

from __future__ import annotations

from .compile_spec import NeutronCompileSpec


def partitioner_for(spec: NeutronCompileSpec):
    """The partitioner of the spec's target (its delegation spec carries the back end's id)."""
    if spec.is_ethos_u:
        from .ethos_u import EthosUPartitioner

        return EthosUPartitioner(spec)
    from .partition import NeutronPartitioner

    return NeutronPartitioner(spec)

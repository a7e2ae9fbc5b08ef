"""NeutronPartitioner: the neutral base partitioner (partition/) delegating to `NeutronBackend`.

Everything it decides comes from the operator registry with the target's kind ("neutron") and the spec's
constraint profile; this class only names the delegate id and the partition tags (neutron_0, neutron_1, ...).
"""

from __future__ import annotations

from ..partition import BasePartitioner
from .backend import BACKEND_ID


class NeutronPartitioner(BasePartitioner):
    backend_id = BACKEND_ID
    tag_prefix = "neutron"

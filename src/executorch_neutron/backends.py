"""The one table of back ends: for each target kind (target.py), its delegate id, NPU name, partitioner, and what
the shared layers need of its payloads (`view` for reports and `inspect_pte`, `claims` / `host_blob` / `on_load`
for the host runtime). lower(), the recipes, the report, `inspect_pte`, numerics and the runtime look a back end
up here instead of branching on its kind; adding a back end is its folder plus one row of `BACKENDS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .compile_spec import NeutronCompileSpec
from .ethos_u import EthosUPartitioner
from .ethos_u import constraints as _ethos_u_limits
from .ethos_u import plugin as _ethos_u
from .ethos_u.backend import host_payload as _ethos_u_reference
from .neutron import constraints as _neutron_limits
from .neutron import plugin as _neutron
from .neutron.backend import BACKEND_ID as _NEUTRON_ID
from .neutron.partitioner import NeutronPartitioner
from .target import ETHOS_U, NEUTRON


@dataclass(frozen=True)
class Backend:
    kind: str  # the target kind it lowers (target.py)
    backend_id: str  # the delegate id in the .pte: the class name of its BackendDetails
    npu: str  # how reports and reasons name the NPU
    partitioner: type  # a subclass of partition.BasePartitioner
    view: Callable[..., dict]  # (blob, lowered-module metadata, reference) -> kind, I/O, format flags, TFLite, meta
    reference: Callable  # lowered module -> what the host runs for it (a host-reference payload), or None
    claims: Callable[[bytes], bool]  # host runtime: is this delegate blob ours?
    host_blob: Callable[[bytes], bytes | None]  # host runtime: the payload it runs for a blob (None: device-only)
    on_load: Callable[[bytes], None]  # host runtime: a program is being loaded
    device_only: str = ""  # host runtime: why a blob with no host payload cannot run, and what to do
    pte_tflite: Callable | None = None  # (blob, deserialized .pte) -> the partition's TFLite, or None (device only)
    layer_estimate: Callable | None = None  # (TFLite, spec) -> (per-layer estimate [{name, op, cycles}], unit)
    #: (partition TFLite or None, lowered-module metadata, target) -> the report's per-layer estimate of a partition
    #: (None: the back end's estimate travels in its metadata instead, as Vela's does)
    partition_estimate: Callable | None = None
    #: (blob, compile spec, partition TFLite or None, partition name) -> the memory its payload needs on the device
    #: beside the .pte (core.memory.Block lines: NPU scratch, ... as the back end's compiler states them)
    memory: Callable | None = None
    #: compile spec -> {"program": where the .pte is stored, "working": where ExecuTorch's buffers live}
    placement: Callable | None = None
    #: ((operator, output elements, MACs) of each CPU node, target) -> the CPU part of the estimate ({"cpu_seconds"})
    cpu_estimate: Callable | None = None
    #: (blob, the .pte's named data by key) -> what compiled the payload (tool and version), or None
    compiled_by: Callable | None = None


BACKENDS: dict[str, Backend] = {b.kind: b for b in (
    Backend(ETHOS_U, EthosUPartitioner.backend_id, "Ethos-U", EthosUPartitioner, _ethos_u.view,
            _ethos_u_reference, _ethos_u.claims, _ethos_u.host_blob, _ethos_u.on_load, _ethos_u.DEVICE_ONLY,
            _ethos_u.pte_tflite, _ethos_u.layer_estimate, memory=_ethos_u.memory, placement=_ethos_u.placement),
    Backend(NEUTRON, _NEUTRON_ID, "Neutron", NeutronPartitioner, _neutron.view, _neutron.reference,
            _neutron.claims, _neutron.host_blob, _neutron.on_load, pte_tflite=_neutron.pte_tflite,
            layer_estimate=_neutron.layer_estimate, partition_estimate=_neutron.partition_estimate,
            memory=_neutron.memory, placement=_neutron.placement, compiled_by=_neutron.compiled_by,
            cpu_estimate=_neutron.cpu_estimate),
)}


def register_limits() -> None:
    """Every back end's own limits into the operator registry, in one order: Neutron's, then Vela's (idempotent)."""
    _neutron_limits.register()
    _ethos_u_limits.register()


register_limits()  # the registry is complete wherever the back-end table is


def for_spec(spec: NeutronCompileSpec) -> Backend:
    return BACKENDS[spec.target_info.kind]


def for_id(backend_id: str) -> Backend | None:
    """The back end whose delegates carry `backend_id`, or None (another vendor's delegate)."""
    return next((b for b in BACKENDS.values() if b.backend_id == backend_id), None)


def for_blob(blob: bytes) -> Backend:
    """The back end a delegate blob belongs to, by its own test (Ethos-U's magic first; Neutron claims the rest)."""
    return next(b for b in BACKENDS.values() if b.claims(blob))


def partitioner_for(spec: NeutronCompileSpec):
    """The partitioner of the spec's target (its delegation spec carries the back end's id)."""
    return for_spec(spec).partitioner(spec)


def view(lowered) -> dict:
    """A lowered module's delegate as reports show it (its back end's `view`)."""
    blob = bytes(lowered.processed_bytes)
    b = for_blob(blob)
    return b.view(blob, getattr(lowered, "meta", {}).get("_delegate_info_meta"), b.reference(lowered))


def host_payload(lowered) -> bytes | None:
    """What the host runs for a lowered module (a host-reference payload, or Neutron microcode the executor
    refuses), or None for a device-only payload."""
    return for_blob(bytes(lowered.processed_bytes)).reference(lowered)


def backend_ids() -> tuple[str, ...]:
    return tuple(b.backend_id for b in BACKENDS.values())

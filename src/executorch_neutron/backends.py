"""The one table of back ends and the plugin API that adds one.

`BACKENDS` holds, per target kind (target.py), a `Backend` row: its delegate id, partitioner, and what the shared
layers need of its payloads (`view` for reports and `inspect_pte`, the report's estimate and back-end section,
`claims` / `host_blob` / `on_load` for the host runtime, the memory its payloads need). lower(), the recipes, the
report, `inspect_pte`, numerics and the runtime look a back end up here instead of branching on its kind.

The built-in rows (Neutron, Ethos-U) are written in their folders' `plugin.py`; `register(row, targets)` adds
another back end from outside the package (tests/toy_backend is one), with its targets, without editing any module
here. This module is also the one place that adds the built-in back ends' operator limits to the registry, in one
order (`register_limits`): importing a back end's folder changes nothing.
"""

from __future__ import annotations

from typing import Iterable

from .compile_spec import NeutronCompileSpec
from .core.backend_row import Backend
from .ethos_u import constraints as _ethos_u_limits
from .ethos_u import plugin as _ethos_u
from .neutron import constraints as _neutron_limits
from .neutron import plugin as _neutron
from .target import KIND_NAMES, register_target

__all__ = ["BACKENDS", "Backend", "UnknownPayloadError", "register"]


class UnknownPayloadError(ValueError):
    """A delegate blob no registered back end recognises (or more than one does)."""


BACKENDS: dict[str, Backend] = {b.kind: b for b in (_ethos_u.ROW, _neutron.ROW)}


def register(row: Backend, targets: Iterable = (), npu: str | None = None) -> Backend:
    """Add a back end (the plugin API): its row, its targets (`target.register_target`) and how reports name its
    NPU (`npu`, default its kind). The host runtime registers its delegate id on its next load. Registering the
    same row again is a no-op; another row for a kind or a delegate id already taken is an error."""
    taken = BACKENDS.get(row.kind) or for_id(row.backend_id)
    if taken is row:
        return row
    if taken is not None:
        raise ValueError(f"back end kind {row.kind!r} or delegate id {row.backend_id!r} is already registered")
    for target in targets:
        register_target(target, npu or KIND_NAMES.get(row.kind, row.kind))
    KIND_NAMES.setdefault(row.kind, npu or row.kind)
    BACKENDS[row.kind] = row
    return row


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
    """The back end a delegate blob belongs to: the one row whose `claims` recognises it (its own magic). A blob
    no row claims, or more than one, is an UnknownPayloadError."""
    found = [b for b in BACKENDS.values() if b.claims(blob)]
    if len(found) != 1:
        owners = " and ".join(b.backend_id for b in found) or "no registered back end"
        raise UnknownPayloadError(f"invalid delegate payload: {len(blob)} bytes starting {bytes(blob[:8]).hex()}, "
                                  f"recognised by {owners} (a damaged .pte, or one made with back ends not "
                                  f"registered here): re-export the .pte")
    return found[0]


def partitioner_for(spec: NeutronCompileSpec):
    """The partitioner of the spec's target (its delegation spec carries the back end's id)."""
    register_limits()
    return for_spec(spec).partitioner(spec)


def view(lowered) -> dict:
    """A lowered module's delegate as reports show it (its back end's `view`)."""
    blob = bytes(lowered.processed_bytes)
    b = for_id(lowered.backend_id) or for_blob(blob)
    return b.view(blob, getattr(lowered, "meta", {}).get("_delegate_info_meta"), b.reference(lowered))


def host_payload(lowered) -> bytes | None:
    """What the host runs for a lowered module (a host-reference payload, or Neutron microcode the executor
    refuses), or None for a device-only payload."""
    return (for_id(lowered.backend_id) or for_blob(bytes(lowered.processed_bytes))).reference(lowered)


def backend_ids() -> tuple[str, ...]:
    return tuple(b.backend_id for b in BACKENDS.values())

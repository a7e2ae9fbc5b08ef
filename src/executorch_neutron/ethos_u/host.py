"""Host run of Ethos-U delegates: there is no Ethos-U simulator here, so each partition runs its reference int8
TFLite in LiteRT. The reference travels inside the .pte as named data (`embed_reference`, the default), keyed by
the SHA-256 of the Vela payload; the first run says (once per process) what it executed. Loading a program registers, for every Ethos-U payload it holds, its reference
or that it has none; the executor resolves a payload through what the most recently loaded program said, so a
device-only .pte never runs a reference another .pte brought. A payload without a reference fails with a message
saying the .pte is device-only.
"""

from __future__ import annotations

import hashlib
import logging
import threading

from .payload import REFERENCE_PREFIX, is_payload

log = logging.getLogger("executorch_neutron")
WHAT_RUNS = ("EthosUBackend on the host: each Ethos-U partition ran its reference TFLite (int8 or int16) in LiteRT "
             "(stored in the .pte), not Vela's command stream; the NPU itself runs the command stream")
DEVICE_ONLY = ("EthosUBackend: this .pte is device-only (lowered with embed_reference=False): it holds Vela's "
               "command stream, which only an Ethos-U NPU runs; lower with embed_reference=True to run it on the host")

_references: dict[str, bytes | None] = {}  # payload SHA-256 -> host-reference payload, or None (device-only)
_lock = threading.Lock()
_said = False


def is_ethos_u(blob: bytes) -> bool:
    return is_payload(bytes(blob[:16]))


def register_from_pte(pte) -> int:
    """Record the Ethos-U payloads of a .pte being loaded (a pte.PteFile, read by the runtime) and their
    references; returns how many references it holds."""
    digests = [hashlib.sha256(d.data).hexdigest() for d in pte.program.backend_delegate_data if is_ethos_u(d.data)]
    stored = references_in(pte.named_data)
    with _lock:
        for digest in digests:
            _references[digest] = stored.get(digest)
    return sum(d in stored for d in digests)


def references_in(named_data: dict[str, bytes]) -> dict[str, bytes]:
    """The host-reference payloads among a .pte's named data (by key), by their Vela payload's SHA-256."""
    return {key[len(REFERENCE_PREFIX):].split(".")[0]: value
            for key, value in named_data.items() if key.startswith(REFERENCE_PREFIX)}


def reference_for(blob: bytes) -> bytes | None:
    """The host-reference payload of an Ethos-U payload, or None (device-only .pte)."""
    global _said
    with _lock:
        ref = _references.get(hashlib.sha256(blob).hexdigest())
        if ref is not None and not _said:
            _said = True
            log.warning(WHAT_RUNS)
    return ref

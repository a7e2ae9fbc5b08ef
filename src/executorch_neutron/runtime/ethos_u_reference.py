"""Host run of Ethos-U delegates: there is no Ethos-U simulator here, so each partition runs its reference int8
TFLite in LiteRT. The reference travels inside the .pte as named data (`embed_reference`, the default), keyed by
the SHA-256 of the Vela payload; loading a program registers its references here, and the executor looks a
payload's reference up when the host EthosUBackend is called. A device-only .pte has none: the call fails with a
message saying so.
"""

from __future__ import annotations

import hashlib
import logging
import threading

log = logging.getLogger("executorch_neutron")

#: the named-data key prefix of a reference (ethos_u/backend.py writes it; keep the two in sync)
REFERENCE_PREFIX = "ethos_u_reference/"
WHAT_RUNS = ("EthosUBackend on the host: each Ethos-U partition ran its reference int8 TFLite in LiteRT (stored in "
             "the .pte), not Vela's command stream; the NPU itself runs the command stream")
DEVICE_ONLY = ("EthosUBackend: this .pte is device-only (lowered with embed_reference=False): it holds Vela's "
               "command stream, which only an Ethos-U NPU runs; lower with embed_reference=True to run it on the host")

_references: dict[str, bytes] = {}  # payload SHA-256 -> host-reference payload (Neutron host-reference format)
_lock = threading.Lock()
_said = False


def register_from_pte(data: bytes) -> int:
    """Register the Ethos-U references stored in a .pte; returns how many it holds."""
    if REFERENCE_PREFIX.encode() not in data:
        return 0
    from executorch.exir._serialize._program import deserialize_pte_binary

    named = deserialize_pte_binary(data).named_data
    if named is None:
        return 0
    found = 0
    with _lock:
        for key, entry in named.pte_data.items():
            if key.startswith(REFERENCE_PREFIX):
                _references[key[len(REFERENCE_PREFIX):]] = bytes(named.buffers[entry.buffer_index])
                found += 1
    return found


def reference_for(blob: bytes) -> bytes | None:
    """The host-reference payload of an Ethos-U payload, or None (device-only .pte)."""
    global _said
    with _lock:
        ref = _references.get(hashlib.sha256(blob).hexdigest())
        if ref is not None and not _said:
            _said = True
            log.warning(WHAT_RUNS)
    return ref

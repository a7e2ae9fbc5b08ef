"""Test helper: read and replace the delegate blobs of a serialized .pte (ExecuTorch's own (de)serializer)."""

from __future__ import annotations

from typing import Callable

from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary


def delegate_blobs(pte: bytes) -> list[bytes]:
    program = deserialize_pte_binary(pte).program
    return [bytes(d.data) for d in program.backend_delegate_data]


def replace_blobs(pte: bytes, change: Callable[[int, bytes], bytes]) -> bytes:
    """A copy of `pte` whose delegate blob i is `change(i, blob_i)`."""
    pte_file = deserialize_pte_binary(pte)
    for i, d in enumerate(pte_file.program.backend_delegate_data):
        d.data = bytes(change(i, bytes(d.data)))
    return bytes(serialize_pte_binary(pte_file))

"""The Ethos-U delegate payload: Vela's raw output (`out_vela.npz`) as the block stream ExecuTorch's Arm device
runtime reads (its `VelaBinStream`), under the backend id `EthosUBackend`.

Blocks, in this order: vela_bin_stream (empty), cmd_data (the command stream, starts "COP1"), weight_data,
scratch_size (uint32: bytes of scratch the runtime allocates), inputs, outputs, vela_end_stream (empty). Each block
is a 32-byte header (name, NUL-padded to 16 bytes; uint32 little-endian unpadded data size; uint8 external flag,
always 0 here; 11 zero bytes) followed by the data zero-padded to a multiple of 16 bytes. `inputs`/`outputs`:
int32 count, then per tensor nine int32: its 6-D shape, element size, offset in scratch and memory region. The
device copies delegate arguments into scratch as they are (no layout change, no argument map), so a partition's
inputs and outputs must be in delegate argument order and in the TFLite's layout.
"""

from __future__ import annotations

import struct
from typing import Mapping

import numpy as np

#: the backend id Arm's device runtime registers (VelaBinStream/EthosUBackend.cpp); `backend.EthosUBackend` bears
#: this name, which is how ExecuTorch finds the class (tests/ethos_u check the two agree)
BACKEND_ID = "EthosUBackend"
#: named-data key prefix of a partition's host reference (`backend.reference_key`)
REFERENCE_PREFIX = "ethos_u_reference/"
MAGIC = b"vela_bin_stream"
END = b"vela_end_stream"
ALIGN = 16
_HEADER = struct.Struct("<16sIB11x")  # name, unpadded size, external flag, reserved
_IO = struct.Struct("<9i")  # 6-D shape, element size, offset, region
IO_RANK = 6


class EthosUPayloadError(ValueError):
    """Vela's raw output or a payload does not have the expected structure."""


def _int32(value, what: str) -> int:
    v = int(np.asarray(value).astype(np.int64))
    if not -(2 ** 31) <= v < 2 ** 31:
        raise EthosUPayloadError(f"{what} = {v} does not fit the payload's int32 field")
    return v


def _io_block(raw: Mapping[str, np.ndarray], prefix: str) -> bytes:
    shapes = raw[f"{prefix}_shape"]
    out = [struct.pack("<i", len(shapes))]
    for i, shape in enumerate(shapes):
        if len(shape) != IO_RANK:
            raise EthosUPayloadError(f"Vela's {prefix} {i} has a {len(shape)}-D shape; the payload needs 6-D")
        fields = [_int32(d, f"{prefix} {i} shape") for d in shape]
        fields += [_int32(raw[f"{prefix}_{k}"][i], f"{prefix} {i} {k}") for k in ("elem_size", "offset", "region")]
        out.append(_IO.pack(*fields))
    return b"".join(out)


def _block(name: bytes, data: bytes) -> bytes:
    return _HEADER.pack(name, len(data), 0) + data + bytes(-len(data) % ALIGN)


def pack(raw: Mapping[str, np.ndarray]) -> bytes:
    """The payload of Vela's raw output (the arrays of `out_vela.npz`)."""
    scratch = raw["scratch_shape"]
    blocks = (
        (MAGIC, b""),
        (b"cmd_data", raw["cmd_data"].tobytes()),
        (b"weight_data", raw["weight_data"].tobytes()),
        (b"scratch_size", struct.pack("<I", int(scratch[0]))),
        (b"inputs", _io_block(raw, "input")),
        (b"outputs", _io_block(raw, "output")),
        (END, b""),
    )
    return b"".join(_block(name, data) for name, data in blocks)


def is_payload(blob: bytes) -> bool:
    return blob[:16] == MAGIC + b"\0"


def unpack(blob: bytes) -> dict[str, bytes]:
    """Block name -> data (unpadded), checking the block structure (for tools and tests)."""
    if not is_payload(blob):
        raise EthosUPayloadError("not an Ethos-U payload: it does not start with the vela_bin_stream block")
    blocks, pos = {}, 0
    while pos < len(blob):
        if pos + _HEADER.size > len(blob):
            raise EthosUPayloadError(f"truncated block header at byte {pos}")
        name, size, _ = _HEADER.unpack_from(blob, pos)
        name = name.rstrip(b"\0").decode("ascii", errors="replace")
        start = pos + _HEADER.size
        if start + size > len(blob):
            raise EthosUPayloadError(f"block {name!r} at byte {pos} declares {size} bytes past the end")
        blocks[name] = blob[start:start + size]
        pos = start + size + (-size % ALIGN)
        if name == END.decode():
            break
    else:
        raise EthosUPayloadError("no vela_end_stream block")
    return blocks

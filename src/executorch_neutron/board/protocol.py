"""The modelrunner serial protocol: frames, the CRC, command/status/error codes, INFO and RESULT payloads.

NXP's `executorch_modelrunner` firmware (MCUXpresso SDK, MIMXRT700-EVK) and a PC exchange frames
`0x55 0xAA CODE LEN(u32 LE) PAYLOAD CRC16(u16 LE)`; the CRC is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no
final xor) over CODE, LEN and PAYLOAD. The board answers each command with exactly one frame, and prints a text
banner at boot on the same line: `FrameReader` skips any bytes before a 0x55 0xAA. Layouts: docs/guide/sources.md,
"NXP's board runner". Pure Python, no serial port and no torch: the client and the test double share it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SYNC = b"\x55\xaa"
HEADER = struct.Struct("<BI")  # code, payload length (after the two sync bytes)
CRC = struct.Struct("<H")

# PC -> board
LOAD_MODEL, LOAD_INPUT, RUN, GET_INFO = 0x01, 0x02, 0x03, 0x04
COMMAND_NAMES = {LOAD_MODEL: "LOAD_MODEL", LOAD_INPUT: "LOAD_INPUT", RUN: "RUN", GET_INFO: "GET_INFO"}
# board -> PC
OK, INFO, RESULT, ERROR = 0x81, 0x82, 0x83, 0xC0
# ExecuTorch ScalarType codes the INFO and RESULT payloads carry, by name (for messages)
DTYPE_NAMES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32", 7: "float64",
               11: "bool", 15: "bfloat16"}

# error code -> (name, what the firmware means by it), from the firmware's protocol.h and engine
ERROR_CODES = {
    0x01: ("CRC", "a frame the board received failed its CRC check"),
    0x02: ("PROTOCOL", "the board did not understand the command (unknown code or a frame larger than its "
                       "receive buffer)"),
    0x03: ("MODEL_TOO_BIG", "the .pte is larger than the firmware's model buffer"),
    0x04: ("MODEL_LOAD", "the firmware could not load the model"),
    0x05: ("INPUT_SIZE", "the input bytes do not match the size of the program's input (or exceed the firmware's "
                         "input buffer)"),
    0x06: ("NPU_INIT", "the Neutron NPU could not be initialised"),
    0x07: ("EXECUTE", "the method failed while executing (or its outputs exceed the firmware's result buffer)"),
    0x08: ("NO_MODEL", "no model loaded, or RUN without a LOAD_INPUT since the last RUN"),
    0x10: ("PROGRAM_LOAD", "ExecuTorch could not parse the .pte (Program::load)"),
    0x11: ("METHOD_NAME", "the .pte has no method 0"),
    0x12: ("METHOD_META", "the method's metadata could not be read"),
    0x13: ("PLANNED_BUFFER", "the method's planned memory does not fit the firmware's method pool"),
    0x14: ("LOAD_METHOD", "load_method failed: typically a CPU operator the firmware's kernel table lacks"),
}


def crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE of `data` (continuing from `crc`)."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def frame_size(payload_length: int) -> int:
    """Bytes on the line of a frame carrying `payload_length` bytes of payload."""
    return len(SYNC) + HEADER.size + payload_length + CRC.size


def encode_frame(code: int, payload: bytes = b"") -> bytes:
    body = HEADER.pack(code, len(payload)) + bytes(payload)
    return SYNC + body + CRC.pack(crc16(body))


@dataclass(frozen=True)
class Frame:
    code: int
    payload: bytes


class CrcError(ValueError):
    """A frame arrived whose CRC does not match its contents (noise on the line, or a wrong baud rate)."""

    def __init__(self, code: int, received: int, computed: int):
        super().__init__(f"a frame (code 0x{code:02X}) failed its CRC check: received 0x{received:04X}, computed "
                         f"0x{computed:04X}")
        self.code = code


class FrameReader:
    """Frames out of a byte stream fed in pieces: bytes before a 0x55 0xAA (a boot banner) are skipped and kept in
    `skipped`; `feed` returns the complete frames so far and raises CrcError for a damaged one (which is dropped,
    so reading can go on)."""

    def __init__(self):
        self._buffer = bytearray()
        self.skipped = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames = []
        while True:
            start = self._buffer.find(SYNC)
            if start < 0:  # keep a trailing 0x55: it may be the first half of a sync
                keep = 1 if self._buffer.endswith(SYNC[:1]) else 0
                self.skipped += self._buffer[:len(self._buffer) - keep]
                del self._buffer[:len(self._buffer) - keep]
                return frames
            self.skipped += self._buffer[:start]
            del self._buffer[:start]
            if len(self._buffer) < 2 + HEADER.size:
                return frames
            code, length = HEADER.unpack_from(self._buffer, 2)
            end = 2 + HEADER.size + length
            if len(self._buffer) < end + CRC.size:
                return frames
            body = bytes(self._buffer[2:end])
            (received,) = CRC.unpack_from(self._buffer, end)
            del self._buffer[:end + CRC.size]
            computed = crc16(body)
            if received != computed:
                raise CrcError(code, received, computed)
            frames.append(Frame(code, body[HEADER.size:]))

    def started(self) -> int:
        """Bytes of a frame begun (its sync arrived) and not complete yet; 0 between frames."""
        return len(self._buffer) if len(self._buffer) >= 2 and self._buffer.startswith(SYNC) else 0

    def pending(self) -> tuple[int, int, int] | None:
        """(code, announced payload length, bytes of the frame arrived so far) of a frame whose header has arrived
        and whose end has not; None between frames."""
        if len(self._buffer) < 2 + HEADER.size or not self._buffer.startswith(SYNC):
            return None
        code, length = HEADER.unpack_from(self._buffer, 2)
        return code, length, len(self._buffer)


# --- INFO and RESULT payloads ------------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorSpec:
    """One tensor as the firmware describes it: ExecuTorch ScalarType code, sizes (logical, NCHW for images), dim
    order (INFO only; None in RESULT, which has none) and its size in bytes."""

    dtype: int
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...] | None
    nbytes: int


class PayloadError(ValueError):
    """An INFO or RESULT payload that does not follow the documented layout."""


class _Cursor:
    def __init__(self, data: bytes, what: str):
        self.data, self.at, self.what = bytes(data), 0, what

    def take(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        if self.at + size > len(self.data):
            raise PayloadError(f"the {self.what} payload ends after {len(self.data)} bytes, inside a field at byte "
                               f"{self.at}: it does not follow the documented layout")
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += size
        return values

    def bytes(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise PayloadError(f"the {self.what} payload announces {n} bytes of tensor data at byte {self.at} but "
                               f"has {len(self.data) - self.at}")
        self.at += n
        return self.data[self.at - n:self.at]


def _spec(cursor: _Cursor, with_dim_order: bool) -> TensorSpec:
    dtype, ndim = cursor.take("BB")
    sizes = cursor.take(f"{ndim}i")
    order = cursor.take(f"{ndim}B") if with_dim_order else None
    (nbytes,) = cursor.take("I")
    return TensorSpec(dtype, tuple(sizes), order, nbytes)


def _pack_spec(spec: TensorSpec, with_dim_order: bool) -> bytes:
    n = len(spec.sizes)
    out = struct.pack(f"<BB{n}i", spec.dtype, n, *spec.sizes)
    if with_dim_order:
        out += struct.pack(f"<{n}B", *spec.dim_order)
    return out + struct.pack("<I", spec.nbytes)


def decode_info(payload: bytes) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """(inputs, outputs) of an INFO payload."""
    cursor = _Cursor(payload, "INFO")
    lists = []
    for _ in range(2):
        (count,) = cursor.take("B")
        lists.append([_spec(cursor, True) for _ in range(count)])
    return lists[0], lists[1]


def encode_info(inputs: list[TensorSpec], outputs: list[TensorSpec]) -> bytes:
    return b"".join(bytes([len(specs)]) + b"".join(_pack_spec(s, True) for s in specs) for specs in (inputs, outputs))


def decode_result(payload: bytes) -> tuple[int, list[tuple[TensorSpec, bytes]]]:
    """(on-board inference time in microseconds, [(output spec, its raw bytes)]) of a RESULT payload."""
    cursor = _Cursor(payload, "RESULT")
    timing_us, count = cursor.take("QB")
    outputs = []
    for _ in range(count):
        spec = _spec(cursor, False)
        outputs.append((spec, cursor.bytes(spec.nbytes)))
    return timing_us, outputs


def encode_result(timing_us: int, outputs: list[tuple[TensorSpec, bytes]]) -> bytes:
    return struct.pack("<QB", timing_us, len(outputs)) + b"".join(
        _pack_spec(spec, False) + data for spec, data in outputs)


def decode_error(payload: bytes) -> tuple[int | None, str]:
    """(error code, the firmware's ASCII message) of an ERROR payload (code None when the payload is empty)."""
    if not payload:
        return None, ""
    return payload[0], payload[1:].decode("ascii", errors="replace")

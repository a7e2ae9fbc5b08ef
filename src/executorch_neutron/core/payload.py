"""The delegate blob the host runtime reads for every back end: `header | microcode | weights | kernels`, each
zero-padded to 16 bytes. It is NXP's device contract for NeutronBackend (written by neutron/npu); its header and
host-reference form also carry the Ethos-U back end's reference TFLite (written by ethos_u/backend.py).

Header (one byte per field, in this order; the device runtime's contract):
    n_inputs            number of Neutron inputs (<= 255)
    n_outputs           number of Neutron outputs (<= 255)
    n_args              number of input arguments of the delegate call
    input_formats[n_inputs]    1 = channels-last: the runtime transposes NCHW -> NHWC before the call
    output_formats[n_outputs]  1 = the runtime transposes NHWC -> NCHW after the call
    input_args[n_inputs]       per Neutron input, its index into the delegate call's input arguments
    output_args[n_outputs]     per Neutron output, its index among the delegate's outputs
                               (the runtime adds n_args to find it in the argument list)
    version             payload version (device: 1 when the NeutronGraph node has profile+debug outputs)

Section 2 starts with a magic word (little-endian uint32):
    MICROCODE_MAGIC 0x64434D6E: device microcode produced by the eIQ Neutron SDK. Word 6 is the microcode size,
        word 7 the weights size (as the device runtime reads them).
    REFERENCE_MAGIC 0x4645526E ("nREF"): a host-reference payload produced without the SDK. Words:
        0 magic, 1 reference format version (2), 2 size of the TFLite flatbuffer,
        3 CRC-32 (zlib.crc32) of: the header bytes (unpadded) + words 0-2 + the TFLite flatbuffer;
        the int8 TFLite flatbuffer follows from byte 16. Its weights and kernels sections are empty.
        The device runtime rejects it (wrong magic); the host runtime checks the CRC, then runs the TFLite in
        LiteRT. Version 1 (word 3 reserved, no CRC) is refused: re-export such a .pte.
    The CRC is ours and covers only host-reference payloads; device microcode payloads stay exactly as NXP's
    runtime reads them.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

ALIGN = 16
MICROCODE_MAGIC = 0x64434D6E
REFERENCE_MAGIC = 0x4645526E
REFERENCE_FORMAT_VERSION = 2
_WORD = struct.Struct("<I")


class PayloadError(ValueError):
    """A delegate blob that does not follow the payload contract."""


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % ALIGN)


@dataclass(frozen=True)
class Header:
    n_args: int
    input_formats: tuple[int, ...]
    output_formats: tuple[int, ...]
    input_args: tuple[int, ...]
    output_args: tuple[int, ...]
    version: int = 0

    @property
    def n_inputs(self) -> int:
        return len(self.input_formats)

    @property
    def n_outputs(self) -> int:
        return len(self.output_formats)

    def validate(self) -> None:
        if not 0 < self.n_inputs <= 255 or not 0 < self.n_outputs <= 255:
            raise PayloadError(f"a partition needs 1..255 inputs and outputs, got {self.n_inputs} and {self.n_outputs}")
        if len(self.input_args) != self.n_inputs or len(self.output_args) != self.n_outputs:
            raise PayloadError("argument maps must have one entry per Neutron input/output")
        if not 0 <= self.n_args <= 255:
            raise PayloadError(f"delegate argument count {self.n_args} does not fit one byte")
        for flag in self.input_formats + self.output_formats:
            if flag not in (0, 1):
                raise PayloadError(f"format flag {flag} is neither 0 (none) nor 1 (channels-last)")
        for idx in self.input_args:
            if not 0 <= idx < self.n_args:
                raise PayloadError(f"input argument index {idx} outside the {self.n_args} delegate inputs")
        if len(set(self.output_args)) != self.n_outputs or any(not 0 <= i < 255 for i in self.output_args):
            raise PayloadError(f"output indices {self.output_args} must be distinct bytes")
        if not 0 <= self.version <= 255:
            raise PayloadError(f"payload version {self.version} does not fit one byte")

    def to_bytes(self) -> bytes:
        self.validate()
        fields = (
            [self.n_inputs, self.n_outputs, self.n_args]
            + list(self.input_formats)
            + list(self.output_formats)
            + list(self.input_args)
            + list(self.output_args)
            + [self.version]
        )
        return bytes(fields)

    @classmethod
    def from_bytes(cls, data: bytes) -> tuple["Header", int]:
        """Parse a header; returns it and its unpadded length."""
        if len(data) < 3:
            raise PayloadError(f"payload of {len(data)} bytes is too short for a header")
        n_in, n_out, n_args = data[0], data[1], data[2]
        length = 3 + 2 * n_in + 2 * n_out + 1
        if len(data) < length:
            raise PayloadError(f"truncated header: needs {length} bytes, payload has {len(data)}")
        pos = 3
        parts = []
        for count in (n_in, n_out, n_in, n_out):
            parts.append(tuple(data[pos:pos + count]))
            pos += count
        header = cls(n_args, parts[0], parts[1], parts[2], parts[3], data[pos])
        header.validate()
        return header, length


@dataclass(frozen=True)
class Payload:
    header: Header
    microcode: bytes  # device microcode, or the reference section (magic + TFLite) for host-reference payloads
    weights: bytes = b""
    kernels: bytes = b""

    @property
    def magic(self) -> int:
        return _WORD.unpack_from(self.microcode, 0)[0] if len(self.microcode) >= 4 else 0

    @property
    def is_reference(self) -> bool:
        return self.magic == REFERENCE_MAGIC

    @property
    def is_microcode(self) -> bool:
        return self.magic == MICROCODE_MAGIC

    @property
    def kind(self) -> str:
        return "host-reference" if self.is_reference else "neutron-microcode" if self.is_microcode else "unknown"

    @property
    def tflite(self) -> bytes:
        """The TFLite flatbuffer of a host-reference payload."""
        if not self.is_reference:
            raise PayloadError("this payload holds Neutron microcode for the device, not a host-reference TFLite")
        if len(self.microcode) < 16:
            raise PayloadError("reference section shorter than its 16-byte preamble")
        version, size, crc = struct.unpack_from("<III", self.microcode, 4)
        if version != REFERENCE_FORMAT_VERSION:
            raise PayloadError(f"reference format version {version} is not {REFERENCE_FORMAT_VERSION} (a file from "
                               f"another executorch_neutron version, or damaged): re-export the .pte")
        if 16 + size > len(self.microcode):
            raise PayloadError(f"reference TFLite of {size} bytes overruns its section")
        tflite = bytes(self.microcode[16:16 + size])
        if _reference_crc(self.header, tflite) != crc:
            raise PayloadError("host-reference payload checksum mismatch: the payload was changed after export "
                               "(a damaged file): re-export the .pte")
        return tflite

    @classmethod
    def reference(cls, header: Header, tflite: bytes) -> "Payload":
        tflite = bytes(tflite)
        preamble = struct.pack("<IIII", REFERENCE_MAGIC, REFERENCE_FORMAT_VERSION, len(tflite),
                               _reference_crc(header, tflite))
        return cls(header, preamble + tflite)


def _reference_crc(header: Header, tflite: bytes) -> int:
    """CRC-32 of a host-reference payload: header bytes, preamble words 0-2, TFLite (see the module docstring)."""
    words = struct.pack("<III", REFERENCE_MAGIC, REFERENCE_FORMAT_VERSION, len(tflite))
    return zlib.crc32(tflite, zlib.crc32(words, zlib.crc32(header.to_bytes())))


#: key, in a lowered module's `_delegate_info_meta`, of the host-reference payload of the TFLite its device compiler
#: was given, where the blob itself is device-only (microcode, a Vela command stream without an embedded
#: reference): what lower()'s host check runs for it. Not in the .pte.
HOST_REFERENCE_META = "host_reference"


def pack(payload: Payload) -> bytes:
    """Serialize a payload; sections are zero-padded to 16 bytes. Byte-exact and deterministic."""
    return b"".join(_pad(s) for s in (payload.header.to_bytes(), payload.microcode, payload.weights, payload.kernels))


def unpack(blob: bytes) -> Payload:
    """Parse a blob written by `pack` (or by the device flow). Raises PayloadError on malformed input."""
    blob = bytes(blob)
    header, hlen = Header.from_bytes(blob)
    pos = hlen + (-hlen % ALIGN)
    if len(blob) < pos + 32:
        raise PayloadError(f"payload of {len(blob)} bytes ends before its second section")
    magic = _WORD.unpack_from(blob, pos)[0]
    if magic == REFERENCE_MAGIC:
        size = _WORD.unpack_from(blob, pos + 8)[0]
        end = pos + 16 + size
        if end > len(blob):
            raise PayloadError(f"reference TFLite of {size} bytes overruns the {len(blob)}-byte payload")
        return Payload(header, blob[pos:end])
    if magic == MICROCODE_MAGIC:
        mc_size = _WORD.unpack_from(blob, pos + 24)[0]
        w_size = _WORD.unpack_from(blob, pos + 28)[0]
        mc_end = pos + mc_size
        w_start = mc_end + (-mc_end % ALIGN)
        w_end = w_start + w_size
        k_start = w_end + (-w_end % ALIGN)
        if mc_size < 32 or k_start > len(blob):
            raise PayloadError(
                f"microcode size {mc_size} and weights size {w_size} overrun the {len(blob)}-byte payload"
            )
        return Payload(header, blob[pos:mc_end], blob[w_start:w_end], blob[k_start:])
    raise PayloadError(f"unknown payload magic 0x{magic:08X}: neither Neutron microcode nor a host-reference payload")

"""Payload blob format: byte-exact packing, pack/unpack round trips, and clear errors on malformed blobs."""

from __future__ import annotations

import struct
import zlib

import pytest

from executorch_neutron.core.payload import MICROCODE_MAGIC, REFERENCE_MAGIC, Header, Payload, PayloadError, pack, unpack

pytestmark = pytest.mark.fast

HEADERS = {
    "1in_1out": Header(1, (1,), (1,), (0,), (0,)),
    "3in_2out_mixed": Header(4, (1, 0, 1), (0, 1), (3, 0, 2), (1, 0)),  # arg 1 is not delegated to the NPU
    "2in_3out_version1": Header(2, (0, 0), (1, 1, 0), (1, 0), (2, 0, 1), version=1),
    "shared_arg": Header(3, (1, 1), (0,), (2, 2), (0,)),  # one argument feeds two Neutron inputs
}


def _microcode(size: int, weights: int) -> bytes:
    words = struct.pack("<8I", MICROCODE_MAGIC, 1, 2, 3, 4, 5, size, weights)
    return words + bytes((7 * i) % 251 for i in range(size - 32))


def _words(data: bytes, at: int, n: int) -> tuple[int, ...]:
    return struct.unpack_from(f"<{n}I", data, at)


@pytest.mark.parametrize("header", HEADERS.values(), ids=HEADERS.keys())
def test_header_bytes_field_by_field(header):
    raw = header.to_bytes()
    n_in, n_out = header.n_inputs, header.n_outputs
    assert raw[0] == n_in and raw[1] == n_out and raw[2] == header.n_args
    pos = 3
    for field, count in (("input_formats", n_in), ("output_formats", n_out), ("input_args", n_in),
                         ("output_args", n_out)):
        assert tuple(raw[pos:pos + count]) == getattr(header, field), field
        pos += count
    assert raw[pos] == header.version and len(raw) == pos + 1
    assert Header.from_bytes(raw + b"\0" * 5) == (header, len(raw))


@pytest.mark.parametrize("header", HEADERS.values(), ids=HEADERS.keys())
@pytest.mark.parametrize("sizes", [(32, 0, 0), (48, 16, 16), (77, 37, 21), (4096, 1000, 3)])
def test_microcode_payload_is_byte_exact_and_round_trips(header, sizes):
    mc_size, w_size, k_size = sizes
    payload = Payload(header, _microcode(mc_size, w_size), bytes((3 * i) % 256 for i in range(w_size)),
                      bytes(k % 256 for k in range(k_size)))
    blob = pack(payload)
    hlen = len(header.to_bytes())
    pad = lambda n: n + (-n % 16)  # noqa: E731
    mc_at, w_at = pad(hlen), pad(hlen) + pad(mc_size)
    k_at = w_at + pad(w_size)
    assert len(blob) == k_at + pad(k_size) and len(blob) % 16 == 0
    assert blob[:hlen] == header.to_bytes() and blob[hlen:mc_at] == b"\0" * (mc_at - hlen)
    assert blob[mc_at:mc_at + mc_size] == payload.microcode
    assert _words(blob, mc_at, 8)[0] == MICROCODE_MAGIC and _words(blob, mc_at, 8)[6:] == (mc_size, w_size)
    assert blob[w_at:w_at + w_size] == payload.weights
    assert blob[k_at:k_at + k_size] == payload.kernels
    back = unpack(blob)
    assert back.header == header and back.microcode == payload.microcode and back.weights == payload.weights
    assert back.kernels[:k_size] == payload.kernels and not any(back.kernels[k_size:])  # only padding follows
    assert back.kind == "neutron-microcode" and pack(back) == blob


@pytest.mark.parametrize("header", HEADERS.values(), ids=HEADERS.keys())
@pytest.mark.parametrize("tflite_size", [1, 16, 333])
def test_reference_payload_is_byte_exact_and_round_trips(header, tflite_size):
    tflite = bytes((i * 13) % 256 for i in range(tflite_size))
    blob = pack(Payload.reference(header, tflite))
    at = len(header.to_bytes()) + (-len(header.to_bytes()) % 16)
    words = _words(blob, at, 4)
    assert words[:3] == (REFERENCE_MAGIC, 2, tflite_size)
    assert words[3] == zlib.crc32(header.to_bytes() + struct.pack("<III", *words[:3]) + tflite)  # independent CRC
    assert blob[at + 16:at + 16 + tflite_size] == tflite and len(blob) % 16 == 0
    back = unpack(blob)
    assert back.header == header and back.tflite == tflite and back.is_reference and not back.is_microcode
    assert pack(back) == blob


def test_pack_is_deterministic():
    p = Payload(HEADERS["3in_2out_mixed"], _microcode(64, 5), b"abcde", b"k")
    assert pack(p) == pack(Payload(HEADERS["3in_2out_mixed"], _microcode(64, 5), b"abcde", b"k"))


BAD_HEADERS = {
    "no_inputs": (lambda: Header(1, (), (0,), (), (0,)), "1..255 inputs"),
    "arg_out_of_range": (lambda: Header(1, (0,), (0,), (1,), (0,)), "outside the 1 delegate inputs"),
    "bad_flag": (lambda: Header(1, (2,), (0,), (0,), (0,)), "format flag 2"),
    "duplicate_outputs": (lambda: Header(1, (0,), (0, 0), (0,), (1, 1)), "distinct"),
    "map_length": (lambda: Header(1, (0,), (0,), (0, 0), (0,)), "one entry per"),
}


@pytest.mark.parametrize("case", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
def test_invalid_headers_are_rejected(case):
    make, text = case
    with pytest.raises(PayloadError, match=text):
        make().to_bytes()


def _good_blob() -> bytes:
    return pack(Payload(HEADERS["3in_2out_mixed"], _microcode(64, 20), bytes(20), bytes(9)))


BAD_BLOBS = {
    "empty": (lambda b: b"", "too short"),
    "truncated_header": (lambda b: b[:5], "truncated header"),
    "no_second_section": (lambda b: b[:16], "ends before its second section"),
    "unknown_magic": (lambda b: b[:16] + b"\x01\x02\x03\x04" + b[20:], "unknown payload magic"),
    "microcode_overrun": (lambda b: b[:16 + 24] + struct.pack("<I", 10_000) + b[16 + 28:], "overrun"),
    "weights_overrun": (lambda b: b[:16 + 28] + struct.pack("<I", 10_000) + b[16 + 32:], "overrun"),
    "tiny_microcode_size": (lambda b: b[:16 + 24] + struct.pack("<I", 8) + b[16 + 28:], "overrun"),
    "header_arg_index": (lambda b: bytes([b[0], b[1], 1]) + b[3:], "outside"),
}


@pytest.mark.parametrize("case", BAD_BLOBS.values(), ids=BAD_BLOBS.keys())
def test_malformed_blobs_raise_payload_error(case):
    mutate, text = case
    with pytest.raises(PayloadError, match=text):
        unpack(mutate(_good_blob()))


def test_reference_tflite_overrun_is_rejected():
    blob = bytearray(pack(Payload.reference(HEADERS["1in_1out"], b"x" * 40)))
    struct.pack_into("<I", blob, 16 + 8, 4000)
    with pytest.raises(PayloadError, match="overruns"):
        unpack(bytes(blob))


def test_microcode_payload_has_no_tflite():
    with pytest.raises(PayloadError, match="microcode"):
        unpack(_good_blob()).tflite


def _flip(at, mask=0x40):
    """Flip bits of one byte of a host-reference blob of HEADERS["3in_2out_mixed"] (header 16 bytes, preamble 16)."""
    def change(blob: bytes) -> bytes:
        b = bytearray(blob)
        b[at(len(b))] ^= mask
        return bytes(b)
    return change


CHECKSUMMED = {
    "header_format_flag": _flip(lambda n: 3, 1),  # still a valid header: only the checksum can tell
    "preamble_size_lower": _flip(lambda n: 16 + 8),
    "tflite_first_byte": _flip(lambda n: 32),
    "tflite_middle": _flip(lambda n: 32 + 150),
    "tflite_last_byte": _flip(lambda n: 32 + 332),
    "crc_word": _flip(lambda n: 16 + 12),
}


@pytest.mark.parametrize("change", CHECKSUMMED.values(), ids=CHECKSUMMED.keys())
def test_changed_host_reference_payload_fails_its_checksum(change):
    tflite = bytes((i * 13) % 256 for i in range(333))
    blob = pack(Payload.reference(HEADERS["3in_2out_mixed"], tflite))
    assert unpack(blob).tflite == tflite
    with pytest.raises(PayloadError, match="checksum|overruns"):
        unpack(change(blob)).tflite


def test_reference_format_version_1_is_refused_with_a_hint():
    blob = bytearray(pack(Payload.reference(HEADERS["1in_1out"], b"x" * 40)))
    struct.pack_into("<I", blob, 16 + 4, 1)
    with pytest.raises(PayloadError, match="version 1 is not 2.*re-export"):
        unpack(bytes(blob)).tflite

"""The frame codec and the INFO/RESULT payloads against the documented layout: the CRC check value of
CRC-16/CCITT-FALSE, frames and payloads built by hand with struct (never with the encoder under test)."""

import struct

import pytest

from executorch_neutron.board import protocol
from executorch_neutron.board.protocol import CrcError, FrameReader, PayloadError, TensorSpec

pytestmark = pytest.mark.fast


def hand_frame(code: int, payload: bytes, crc: int) -> bytes:
    return b"\x55\xaa" + struct.pack("<BI", code, len(payload)) + payload + struct.pack("<H", crc)


def test_crc_check_value():
    assert protocol.crc16(b"123456789") == 0x29B1


def test_crc_of_a_hand_computed_frame():
    # CRC-16/CCITT-FALSE of 81 00 00 00 00 (status OK, empty payload), computed bit by bit from the definition
    crc = 0xFFFF
    for byte in bytes([0x81, 0, 0, 0, 0]):
        for bit in range(7, -1, -1):
            top = ((crc >> 15) & 1) ^ ((byte >> bit) & 1)
            crc = ((crc << 1) & 0xFFFF) ^ (0x1021 if top else 0)
    assert protocol.encode_frame(protocol.OK) == hand_frame(0x81, b"", crc)


@pytest.mark.parametrize("code,payload", [(0x01, b"\x00PTE" * 50), (0x04, b""), (0x02, bytes(range(256)))])
def test_encode_matches_the_documented_layout(code, payload):
    frame = protocol.encode_frame(code, payload)
    assert frame[:2] == b"\x55\xaa" and frame[2] == code
    assert struct.unpack("<I", frame[3:7])[0] == len(payload) and frame[7:-2] == payload
    assert frame == hand_frame(code, payload, protocol.crc16(frame[2:-2]))


def test_reader_skips_the_banner_and_splits_a_stream_fed_byte_by_byte():
    stream = (b"\r\nExecuTorch Modelrunner Ready\r\n\x55junk" + hand_frame(0x81, b"", protocol.crc16(b"\x81\0\0\0\0"))
              + hand_frame(0x82, b"\x00\x00", protocol.crc16(b"\x82\x02\0\0\0\x00\x00")))
    reader, frames = FrameReader(), []
    for i in range(len(stream)):
        frames += reader.feed(stream[i:i + 1])
    assert [(f.code, f.payload) for f in frames] == [(0x81, b""), (0x82, b"\x00\x00")]
    assert bytes(reader.skipped) == b"\r\nExecuTorch Modelrunner Ready\r\n\x55junk"


def test_reader_reports_a_crc_error_and_goes_on():
    good = hand_frame(0x81, b"", protocol.crc16(b"\x81\0\0\0\0"))
    reader = FrameReader()
    with pytest.raises(CrcError, match="0x83"):
        reader.feed(hand_frame(0x83, b"abc", 0x1234) + good)
    assert reader.feed(b"") == [protocol.Frame(0x81, b"")]


def test_decode_info_of_a_hand_built_payload():
    # one int8 input [1, 3, 32, 32] channels-last (the CifarNet sample session), one float output [1, 10]
    payload = (b"\x01" + struct.pack("<BB4i4BI", 1, 4, 1, 3, 32, 32, 0, 2, 3, 1, 3072)
               + b"\x01" + struct.pack("<BB2i2BI", 6, 2, 1, 10, 0, 1, 40))
    inputs, outputs = protocol.decode_info(payload)
    assert inputs == [TensorSpec(1, (1, 3, 32, 32), (0, 2, 3, 1), 3072)]
    assert outputs == [TensorSpec(6, (1, 10), (0, 1), 40)]
    assert protocol.encode_info(inputs, outputs) == payload


def test_decode_result_of_a_hand_built_payload():
    data0, data1 = struct.pack("<10f", *range(10)), bytes([0xFF, 0x7F])
    payload = (struct.pack("<QB", 848, 2) + struct.pack("<BB2iI", 6, 2, 1, 10, 40) + data0
               + struct.pack("<BB1iI", 1, 1, 2, 2) + data1)
    timing, outputs = protocol.decode_result(payload)
    assert timing == 848
    assert outputs == [(TensorSpec(6, (1, 10), None, 40), data0), (TensorSpec(1, (2,), None, 2), data1)]
    assert protocol.encode_result(timing, outputs) == payload


@pytest.mark.parametrize("payload", [b"", struct.pack("<QB", 1, 1) + struct.pack("<BB2iI", 6, 2, 1, 10, 40) + b"x"])
def test_truncated_result_is_refused(payload):
    with pytest.raises(PayloadError):
        protocol.decode_result(payload)


def test_decode_error():
    assert protocol.decode_error(b"\x14load_model") == (0x14, "load_model")
    assert protocol.decode_error(b"\x01") == (0x01, "")

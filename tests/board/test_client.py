"""The serial client on a pseudo-terminal whose other end this test writes by hand (frames built with struct and
binascii.crc_hqx): the banner is drained, answers are read, and a damaged frame, an ERROR frame, an unexpected
status and silence each become their one error."""

import binascii
import os
import struct
import tty

import pytest

from executorch_neutron.board.client import BoardError, BoardProtocolError, BoardTimeout, ModelRunner
from executorch_neutron.board.protocol import TensorSpec

pytestmark = pytest.mark.fast


def frame(code: int, payload: bytes = b"", crc: int | None = None) -> bytes:
    body = struct.pack("<BI", code, len(payload)) + payload
    return b"\x55\xaa" + body + struct.pack("<H", binascii.crc_hqx(body, 0xFFFF) if crc is None else crc)


@pytest.fixture
def line():
    """(the board's end of the line, a connected ModelRunner)."""
    master, slave = os.openpty()
    tty.setraw(slave)
    runner = ModelRunner(os.ttyname(slave), timeout=0.5)
    yield master, runner
    runner.close()
    os.close(slave)
    os.close(master)


def sent(master: int) -> bytes:
    return os.read(master, 65536)


def test_banner_then_info(line):
    master, runner = line
    os.write(master, b"\r\nExecuTorch Modelrunner Ready\r\n")
    assert runner.drain_banner(quiet=0.2) == b"\r\nExecuTorch Modelrunner Ready\r\n"
    info = b"\x01" + struct.pack("<BB2i2BI", 6, 2, 1, 4, 0, 1, 16) + b"\x00"
    os.write(master, b"late text" + frame(0x82, info))
    assert runner.get_info() == ([TensorSpec(6, (1, 4), (0, 1), 16)], [])
    assert sent(master) == frame(0x04)  # GET_INFO as the documented layout spells it


def test_error_frame(line):
    master, runner = line
    os.write(master, frame(0xC0, b"\x14load_model"))
    with pytest.raises(BoardError, match=r"LOAD_MODEL with error 0x14 \(LOAD_METHOD: .*message 'load_model'") as e:
        runner.load_model(b"PTE")
    assert e.value.code == 0x14 and sent(master) == frame(0x01, b"PTE")


def test_damaged_answer(line):
    master, runner = line
    os.write(master, frame(0x81, crc=0xBEEF))
    with pytest.raises(BoardProtocolError, match="answer to LOAD_INPUT was damaged .*CRC.*check the baud rate"):
        runner.load_input(b"\x00" * 4)


def test_unexpected_status(line):
    master, runner = line
    os.write(master, frame(0x81))
    with pytest.raises(BoardProtocolError, match="answered RUN with status 0x81, not 0x83"):
        runner.run()


def test_silence(line):
    _, runner = line
    with pytest.raises(BoardTimeout, match="no answer to GET_INFO from /dev/pts/.* printed no boot banner"):
        runner.get_info()

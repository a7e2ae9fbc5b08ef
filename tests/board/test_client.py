"""The serial client on a pseudo-terminal whose other end this test writes by hand (frames built with struct and
binascii.crc_hqx): the banner is drained, answers are read, and each link fault becomes its own one-line error: a
damaged frame, an ERROR frame, an unexpected status, silence, an answer cut off part-way, a header announcing more
than the firmware's buffers, the boot banner while waiting, the device gone, a RESULT that disagrees with GET_INFO,
a port another program holds; log text between frames and a frame in small pieces are read as the frame."""

import binascii
import os
import struct
import subprocess
import threading
import time
import tty

import pytest

from executorch_neutron.board.client import (BoardBusy, BoardDisconnected, BoardError, BoardProtocolError,
                                             BoardRebooted, BoardTimeout, ModelRunner, ResultMismatch)
from executorch_neutron.board.protocol import TensorSpec
from executorch_neutron.board.runners import MODELRUNNER_BUFFERS

pytestmark = pytest.mark.fast


def frame(code: int, payload: bytes = b"", crc: int | None = None) -> bytes:
    body = struct.pack("<BI", code, len(payload)) + payload
    return b"\x55\xaa" + body + struct.pack("<H", binascii.crc_hqx(body, 0xFFFF) if crc is None else crc)


@pytest.fixture
def line():
    """(the board's end of the line, a connected ModelRunner with NXP's firmware buffer sizes)."""
    master, slave = os.openpty()
    tty.setraw(slave)
    runner = ModelRunner(os.ttyname(slave), timeout=0.5, buffers=MODELRUNNER_BUFFERS)
    yield master, runner
    runner.close()
    os.close(slave)
    try:
        os.close(master)
    except OSError:  # closed by the test (the device went away)
        pass


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
    with pytest.raises(BoardProtocolError, match="answer to LOAD_INPUT was damaged .*CRC.*wrong baud rate; check --baud"):
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


# one float32 output [1, 10] as GET_INFO announces it, and RESULT payloads built by hand
INFO_1x10 = b"\x01" + struct.pack("<BB2i2BI", 6, 2, 1, 4, 0, 1, 16) + b"\x01" + struct.pack("<BB2i2BI", 6, 2, 1, 10, 0, 1, 40)


def result(*outputs: tuple[int, tuple[int, ...], bytes]) -> bytes:
    payload = struct.pack("<QB", 848, len(outputs))
    for dtype, sizes, data in outputs:
        payload += struct.pack(f"<BB{len(sizes)}iI", dtype, len(sizes), *sizes, len(data)) + data
    return frame(0x83, payload)


def test_result_as_announced_is_accepted(line):
    master, runner = line
    os.write(master, frame(0x82, INFO_1x10))
    runner.get_info()
    os.write(master, result((6, (1, 10), bytes(40))))
    assert runner.run() == (848, [(TensorSpec(6, (1, 10), None, 40), bytes(40))])


@pytest.mark.parametrize("name,outputs,message", [
    ("shape", [(6, (1, 5), bytes(20))],
     r"output 0 from the board is float32\[1, 5\] \(20 bytes\) but GET_INFO announced float32\[1, 10\] \(40 bytes\)"),
    ("dtype", [(1, (1, 10), bytes(40))],
     r"output 0 from the board is int8\[1, 10\] \(40 bytes\) but GET_INFO announced float32\[1, 10\]"),
    ("count", [(6, (1, 10), bytes(40)), (6, (1,), bytes(4))],
     r"RESULT carries 2 output\(s\) \(float32\[1, 10\] \(40 bytes\), float32\[1\] \(4 bytes\)\) but GET_INFO announced 1 "),
])
def test_result_that_disagrees_with_get_info(line, name, outputs, message):
    master, runner = line
    os.write(master, frame(0x82, INFO_1x10))
    runner.get_info()
    os.write(master, result(*outputs))
    with pytest.raises(ResultMismatch, match=message + r".*another model or sent a stale result"):
        runner.run()


def test_answer_cut_off_part_way_says_how_much_arrived(line):
    master, runner = line
    os.write(master, frame(0x82, INFO_1x10)[:20])
    with pytest.raises(BoardProtocolError, match=r"answer to GET_INFO stopped after 20 of 43 bytes"):
        runner.get_info()


def test_answer_cut_off_inside_its_header(line):
    master, runner = line
    os.write(master, frame(0x81)[:4])
    with pytest.raises(BoardProtocolError, match=r"answer to LOAD_INPUT stopped after 4 bytes, inside its header"):
        runner.load_input(b"\x00" * 4)


@pytest.mark.parametrize("buffers,bound", [(MODELRUNNER_BUFFERS, r"266,240 bytes, its result buffer"),
                                           ({}, r"65,536 bytes, a bound for a firmware of unknown buffers")])
def test_impossible_length_is_refused_at_once(line, buffers, bound):
    master, runner = line
    runner.buffers, runner.timeout = dict(buffers), 30.0
    os.write(master, b"\x55\xaa\x83" + struct.pack("<I", 0xFFFFFFF0) + b"partial")
    start = time.monotonic()
    with pytest.raises(BoardProtocolError, match=r"answer to RUN \(code 0x83\) announces 4,294,967,280 bytes, more "
                                                 r"than the firmware can send \(" + bound):
        runner.run()
    assert time.monotonic() - start < 25  # not the 30 s timeout, let alone the frame's transfer time


@pytest.mark.parametrize("before", [b"", b"\x55\xaa\x83\x10\x00\x00\x00abc"], ids=["between frames", "inside a frame"])
def test_boot_banner_while_waiting_is_a_reboot(line, before):
    master, runner = line
    os.write(master, before + b"\r\nExecuTorch Modelrunner Ready\r\n")
    with pytest.raises(BoardRebooted, match=r"the board rebooted during RUN \(it printed its boot banner "
                                            r"'ExecuTorch Modelrunner Ready' again\): a hard fault, a watchdog"):
        runner.run()


def test_log_text_between_frames_is_skipped(line):
    master, runner = line
    os.write(master, b"[fw] heap 12345 free\r\n" + frame(0x81) + b"[fw] done\r\n")
    runner.load_input(b"\x00" * 4)
    os.write(master, b"[fw] input ok\r\n" + frame(0x82, INFO_1x10))
    assert runner.get_info()[1] == [TensorSpec(6, (1, 10), (0, 1), 40)]


def test_frame_in_small_pieces(line):
    master, runner = line
    whole = frame(0x82, INFO_1x10)

    def trickle():
        for at in range(0, len(whole), 3):
            os.write(master, whole[at:at + 3])
            time.sleep(0.02)

    writer = threading.Thread(target=trickle)
    writer.start()
    assert runner.get_info()[0] == [TensorSpec(6, (1, 4), (0, 1), 16)]
    writer.join()


def test_device_gone_names_the_step(line):
    master, runner = line
    os.close(master)
    with pytest.raises(BoardDisconnected, match=r"went away during RUN: the board was unplugged or reset by the host") \
            as e:
        runner.run()
    assert "readiness" not in str(e.value) and "returned no data" not in str(e.value)


def test_a_second_connection_to_the_port_is_refused(line):
    _, runner = line
    with pytest.raises(BoardBusy, match=rf"{runner.port} is in use by .* \(pid {os.getpid()}\): close it and run "
                                        "again"):
        ModelRunner(runner.port)


def test_a_program_holding_the_port_is_named():
    master, slave = os.openpty()
    port = os.ttyname(slave)
    with open(port, "rb") as held:
        holder = subprocess.Popen(["sleep", "60"], stdin=held)
    try:
        with pytest.raises(BoardBusy, match=rf"{port} is in use by sleep \(pid {holder.pid}\): close it and run again"):
            ModelRunner(port)
    finally:
        holder.kill()
        holder.wait()
        os.close(slave)
        os.close(master)

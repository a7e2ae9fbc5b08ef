"""`ModelRunner`: one serial connection to a board running NXP's executorch_modelrunner firmware, one method per
protocol command (LOAD_MODEL, GET_INFO, LOAD_INPUT, RUN), after draining the boot banner.

pyserial is an optional dependency (`pip install 'executorch-neutron[board]'`), imported when a connection is
opened. The port is claimed first (port.py: one program per port). Every wait is bounded: sending a command by
`timeout` plus its time on the line at the baud rate, its answer by `timeout` plus the time of the frame the
answer's header announces, which may not exceed the firmware's buffers (the runner profile's, else a bound from
GET_INFO). Every link fault is its own one-line error naming the step: an ERROR frame (`BoardError`), no answer
(`BoardTimeout`), a damaged, cut-off or impossibly long answer (`BoardProtocolError`), the boot banner again
(`BoardRebooted`), the device gone (`BoardDisconnected`), a RESULT that disagrees with GET_INFO (`ResultMismatch`).
Text between frames (a firmware's log) is skipped. What an error means for a given .pte is said by `session.py`.
"""

from __future__ import annotations

import time

from . import protocol
from .port import PortBusy, claim, holders, in_use
from .protocol import FrameReader, TensorSpec, encode_frame, frame_size

INSTALL_HINT = "pip install 'executorch-neutron[board]' (installs pyserial)"
# what NXP's firmware prints once at boot (main.cpp), before any frame: seen again, the board has rebooted
BANNER_MARK = b"ExecuTorch Modelrunner Ready"
UNKNOWN_FIRMWARE_ANSWER = 64 * 1024  # an answer's bound when the runner's buffers are unknown (besides GET_INFO's)
_CHUNK = 4096  # bytes per write: a stalled upload says how far it got


class BoardUnavailable(RuntimeError):
    """The board cannot be reached: pyserial is missing or the port cannot be opened."""


class BoardBusy(BoardUnavailable):
    """Another program (or another run of ours) holds the port."""


class BoardTimeout(RuntimeError):
    """A command got no answer in time (or could not be sent in time)."""

    def __init__(self, step: str, seconds: float, port: str, baud: int, banner: bytes, message: str | None = None):
        seen = (f"; at boot it printed {banner.decode('ascii', 'replace').strip()!r}" if banner.strip()
                else "; it printed no boot banner")
        super().__init__(message or (
            f"no answer to {step} from {port} within {seconds:.1f} s at {baud} baud{seen}: check the port, the baud "
            "rate (--baud) and that the board runs the executorch_modelrunner firmware (reset the board: it prints a "
            "banner at boot)"))
        self.step = step


class BoardError(RuntimeError):
    """The board answered a command with an ERROR frame."""

    def __init__(self, step: str, code: int | None, message: str):
        name, meaning = protocol.ERROR_CODES.get(code, ("UNKNOWN", "an error code the protocol does not define"))
        text = f"0x{code:02X}" if code is not None else "without a code"
        super().__init__(f"the board answered {step} with error {text} ({name}: {meaning})"
                         + (f", message {message!r}" if message else ""))
        self.step, self.code, self.board_message = step, code, message


class BoardProtocolError(RuntimeError):
    """An answer that is not what the protocol says the command gets (a damaged frame, an unexpected status)."""


class BoardRebooted(BoardProtocolError):
    """The board printed its boot banner while a command waited for its answer."""


class BoardDisconnected(BoardProtocolError):
    """The port went away (unplugged, or the board's USB link was reset)."""


class ResultMismatch(BoardProtocolError):
    """A RESULT whose outputs disagree with what GET_INFO announced."""


def _serial():
    try:
        import serial
    except ImportError:
        raise BoardUnavailable(f"running on a board needs pyserial, which is not installed: {INSTALL_HINT}") from None
    return serial


class ModelRunner:
    """A connection to the modelrunner firmware on `port` (e.g. /dev/ttyACM0, COM5). `buffers`: the firmware's
    buffer sizes in bytes (a runner profile's `buffers`; `result` bounds every answer), empty when unknown."""

    def __init__(self, port: str, baud: int = 115200, timeout: float = 10.0, *, buffers: dict | None = None):
        serial = _serial()
        self._serial_module = serial
        self.port, self.baud, self.timeout = port, baud, timeout
        self.buffers = dict(buffers or {})
        self.banner = b""
        self.info: tuple[list[TensorSpec], list[TensorSpec]] | None = None  # the last GET_INFO answer
        self._reader = FrameReader()
        try:
            self._lock = claim(port)
        except PortBusy as exc:
            raise BoardBusy(str(exc)) from None
        try:
            self._port = serial.Serial(port, baud, timeout=0.05, exclusive=True)
        except (serial.SerialException, OSError, ValueError) as exc:
            self._lock.release()
            if _busy(exc):
                raise BoardBusy(str(in_use(port, holders(port)))) from None
            raise BoardUnavailable(f"cannot open {port} at {baud} baud ({exc}); check the port name (is the board "
                                   "plugged in?)") from None
        _exclusive(self._port)

    def __enter__(self) -> "ModelRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._port.reset_output_buffer()  # after a Ctrl-C mid-upload: closing would wait for the rest to drain
        except Exception:  # noqa: BLE001 - the device may be gone: closing is all that is left to do
            pass
        try:
            self._port.close()
        except Exception:  # noqa: BLE001
            pass
        self._lock.release()

    def _line_seconds(self, nbytes: int) -> float:
        return 10 * nbytes / self.baud  # 8N1: ten bits a byte on the line

    def _read(self, step: str) -> bytes:
        try:
            return self._port.read(self._port.in_waiting or 1)
        except (self._serial_module.SerialException, OSError):
            raise self._gone(step) from None

    def _gone(self, step: str) -> BoardDisconnected:
        return BoardDisconnected(f"{self.port} went away during {step}: the board was unplugged or reset by the host "
                                 "(its USB link dropped); plug it in, wait for the port to come back and run again")

    def drain_banner(self, quiet: float = 0.3, limit: float = 3.0) -> bytes:
        """Read and keep what the board prints until the line has been quiet for `quiet` seconds (at most `limit`
        seconds, and at most the timeout): the boot banner, which would otherwise precede the first answer."""
        start = last = time.monotonic()
        limit = min(limit, self.timeout)
        while time.monotonic() - last < quiet and time.monotonic() - start < limit:
            chunk = self._read("the boot banner")
            if chunk:
                self.banner += chunk
                last = time.monotonic()
        return self.banner

    def _rebooted(self, text: bytes) -> bytes | None:
        """The boot banner in `text` (NXP's, or the one drained at the start), or None."""
        marks = [BANNER_MARK] + [line.strip() for line in self.banner.splitlines() if len(line.strip()) >= 8][-1:]
        return next((mark for mark in marks if mark in text), None)

    def _reboot_error(self, step: str, mark: bytes) -> BoardRebooted:
        return BoardRebooted(
            f"the board rebooted during {step} (it printed its boot banner {mark.decode('ascii', 'replace')!r} "
            "again): a hard fault, a watchdog reset or a stack overflow in the firmware, or a power dip; check the "
            "USB cable and power, whether the .pte runs on the host (`executorch-neutron run MODEL.pte`), and the "
            "firmware's memory (stack, method pool) on its debug console")

    def _send(self, step: str, frame: bytes) -> None:
        budget = self.timeout + self._line_seconds(len(frame))
        deadline, sent = time.monotonic() + budget, 0
        while sent < len(frame):
            chunk = frame[sent:sent + _CHUNK]
            try:
                self._port.write_timeout = max(deadline - time.monotonic(), 0.01)  # reconfigures the port
                self._port.write(chunk)
            except self._serial_module.SerialTimeoutException:
                raise BoardTimeout(step, budget, self.port, self.baud, self.banner, (
                    f"{step} could not be sent to {self.port}: the board took {sent:,} of {len(frame):,} bytes in "
                    f"{budget:.1f} s at {self.baud} baud and stopped reading (the firmware hung, or another program "
                    "holds the line); reset the board and run again")) from None
            except (self._serial_module.SerialException, OSError):
                raise self._gone(step) from None
            sent += len(chunk)

    def _answer_limit(self, command: int) -> tuple[int, str]:
        """The largest answer payload the firmware can send to `command`, and where that bound comes from."""
        if "result" in self.buffers:
            return self.buffers["result"], "its result buffer"
        expected = _result_size(self.info[1]) if command == protocol.RUN and self.info else 0
        if expected > UNKNOWN_FIRMWARE_ANSWER:
            return expected, "the RESULT that GET_INFO announces"
        return UNKNOWN_FIRMWARE_ANSWER, "a bound for a firmware of unknown buffers"

    def _ask(self, command: int, payload: bytes = b"") -> protocol.Frame:
        step = protocol.COMMAND_NAMES[command]
        frame = encode_frame(command, payload)
        self._send(step, frame)
        limit, why = self._answer_limit(command)
        budget = self.timeout + self._line_seconds(min(len(frame), _CHUNK))  # what may still be in the OS buffer
        start = time.monotonic()
        deadline, announced, seen, skipped = start + budget, None, bytearray(), len(self._reader.skipped)
        while time.monotonic() < deadline:
            chunk = self._read(step)
            seen += chunk
            try:
                frames = self._reader.feed(chunk)
            except protocol.CrcError as exc:
                mark = self._rebooted(bytes(seen))
                if mark:
                    raise self._reboot_error(step, mark) from None
                raise BoardProtocolError(f"the answer to {step} was damaged ({exc}): noise on the line or a wrong "
                                         "baud rate; check --baud and the cable, and run again") from None
            if frames:
                answer = frames[0]
                if answer.code == protocol.ERROR:
                    raise BoardError(step, *protocol.decode_error(answer.payload))
                return answer
            mark = self._rebooted(bytes(self._reader.skipped[skipped:]))
            if mark:
                raise self._reboot_error(step, mark)
            pending = self._reader.pending()
            if pending and pending[:2] != announced:
                code, length, _ = pending
                if length > limit:
                    raise BoardProtocolError(
                        f"the answer to {step} (code 0x{code:02X}) announces {length:,} bytes, more than the firmware "
                        f"can send ({limit:,} bytes, {why}): the line is garbled or the board runs another firmware; "
                        "check --baud, reset the board and run again")
                announced = pending[:2]
                deadline += self._line_seconds(frame_size(length))
        waited = time.monotonic() - start
        mark = self._rebooted(bytes(seen))
        if mark:
            raise self._reboot_error(step, mark)
        pending = self._reader.pending()
        if pending:
            raise BoardProtocolError(
                f"the answer to {step} stopped after {pending[2]:,} of {frame_size(pending[1]):,} bytes (nothing more "
                f"came for {self.timeout:.1f} s): the board reset or hung while answering, or the line lost bytes; "
                "check the cable and --baud, reset the board and run again")
        if self._reader.started():
            raise BoardProtocolError(
                f"the answer to {step} stopped after {self._reader.started()} bytes, inside its header (nothing more "
                f"came for {self.timeout:.1f} s): the board reset or hung while answering, or the line lost bytes; "
                "check the cable and --baud, reset the board and run again")
        text = bytes(self._reader.skipped[skipped:]).decode("ascii", "replace").strip()
        if text:
            raise BoardTimeout(step, waited, self.port, self.baud, self.banner, (
                f"no answer to {step} from {self.port} within {waited:.1f} s at {self.baud} baud, only text "
                f"{text[-120:]!r}: the board runs another firmware or the baud rate (--baud) is wrong"))
        raise BoardTimeout(step, waited, self.port, self.baud, self.banner)

    def _expect(self, command: int, status: int, payload: bytes = b"") -> bytes:
        answer = self._ask(command, payload)
        if answer.code != status:
            raise BoardProtocolError(f"the board answered {protocol.COMMAND_NAMES[command]} with status "
                                     f"0x{answer.code:02X}, not 0x{status:02X}: is it running the "
                                     "executorch_modelrunner firmware?")
        return answer.payload

    def load_model(self, pte: bytes) -> None:
        self.info = None
        self._expect(protocol.LOAD_MODEL, protocol.OK, pte)

    def get_info(self) -> tuple[list[TensorSpec], list[TensorSpec]]:
        payload = self._expect(protocol.GET_INFO, protocol.INFO)
        if not payload:
            raise BoardProtocolError("the board answered GET_INFO with no tensors: it holds no model (was it reset "
                                     "after LOAD_MODEL?); run again")
        self.info = _decoded(protocol.decode_info, payload)
        return self.info

    def load_input(self, data: bytes) -> None:
        self._expect(protocol.LOAD_INPUT, protocol.OK, data)

    def run(self) -> tuple[int, list[tuple[TensorSpec, bytes]]]:
        """(on-board inference time in microseconds, raw outputs), checked against GET_INFO when it was asked. The
        input is consumed: LOAD_INPUT again first."""
        timing, outputs = _decoded(protocol.decode_result, self._expect(protocol.RUN, protocol.RESULT))
        if self.info is not None:
            check_result(outputs, self.info[1])
        return timing, outputs


def describe(spec: TensorSpec) -> str:
    return f"{protocol.DTYPE_NAMES.get(spec.dtype, f'dtype {spec.dtype}')}{list(spec.sizes)} ({spec.nbytes:,} bytes)"


def check_result(outputs: list[tuple[TensorSpec, bytes]], announced: list[TensorSpec]) -> None:
    """Raise ResultMismatch unless the RESULT's outputs are those GET_INFO announced (count, dtype, sizes, bytes)."""
    why = "the firmware answered for another model or sent a stale result; reset the board and run again"
    if len(outputs) != len(announced):
        raise ResultMismatch(f"the board's RESULT carries {len(outputs)} output(s) "
                             f"({', '.join(describe(s) for s, _ in outputs)}) but GET_INFO announced {len(announced)} "
                             f"({', '.join(map(describe, announced))}): {why}")
    for i, ((spec, data), info) in enumerate(zip(outputs, announced)):
        if (spec.dtype, tuple(spec.sizes), spec.nbytes) != (info.dtype, tuple(info.sizes), info.nbytes) \
                or len(data) != info.nbytes:
            raise ResultMismatch(f"output {i} from the board is {describe(spec)} but GET_INFO announced "
                                 f"{describe(info)}: {why}")


def _result_size(outputs: list[TensorSpec]) -> int:
    """The RESULT payload's size for these outputs (timing u64, count u8, per output dtype, ndim, sizes, nbytes,
    data)."""
    return 9 + sum(2 + 4 * len(s.sizes) + 4 + s.nbytes for s in outputs)


def _busy(exc: Exception) -> bool:
    """Whether opening failed because another program holds the port exclusively."""
    import errno

    text = str(exc)
    return getattr(exc, "errno", None) in (errno.EBUSY, errno.EAGAIN) or \
        "exclusively lock" in text or "Access is denied" in text or "PermissionError(13" in text


def _exclusive(port) -> None:
    """TIOCEXCL: later opens of the device by other programs fail (root's excepted), where the platform has it."""
    try:
        import fcntl
        import termios

        fcntl.ioctl(port.fileno(), termios.TIOCEXCL)
    except (ImportError, AttributeError, OSError):
        pass


def _decoded(decode, payload: bytes):
    try:
        return decode(payload)
    except protocol.PayloadError as exc:
        raise BoardProtocolError(f"{exc}: is the board running the executorch_modelrunner firmware?") from None

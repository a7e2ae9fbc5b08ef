"""`ModelRunner`: one serial connection to a board running NXP's executorch_modelrunner firmware, one method per
protocol command (LOAD_MODEL, GET_INFO, LOAD_INPUT, RUN), after draining the boot banner.

pyserial is an optional dependency (`pip install 'executorch-neutron[board]'`), imported when a connection is
opened. Each command waits for its one answer frame for `timeout` seconds plus the time the frame takes on the
line at the baud rate; an ERROR frame raises `BoardError` (code, the firmware's message, the step), no answer
raises `BoardTimeout` naming the step. What an error means for a given .pte is said by `session.py`.
"""

from __future__ import annotations

import time

from . import protocol
from .protocol import FrameReader, TensorSpec, encode_frame

INSTALL_HINT = "pip install 'executorch-neutron[board]' (installs pyserial)"


class BoardUnavailable(RuntimeError):
    """The board cannot be reached: pyserial is missing or the port cannot be opened."""


class BoardTimeout(RuntimeError):
    """A command got no answer in time."""

    def __init__(self, step: str, seconds: float, port: str, baud: int, banner: bytes):
        seen = (f"; at boot it printed {banner.decode('ascii', 'replace').strip()!r}" if banner.strip()
                else "; it printed no boot banner")
        super().__init__(f"no answer to {step} from {port} within {seconds:.1f} s at {baud} baud{seen}: check the "
                         f"port, the baud rate (--baud) and that the board runs the executorch_modelrunner firmware "
                         f"(reset the board: it prints a banner at boot)")
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


def _serial():
    try:
        import serial
    except ImportError:
        raise BoardUnavailable(f"running on a board needs pyserial, which is not installed: {INSTALL_HINT}") from None
    return serial


class ModelRunner:
    """A connection to the modelrunner firmware on `port` (e.g. /dev/ttyACM0, COM5)."""

    def __init__(self, port: str, baud: int = 115200, timeout: float = 10.0):
        serial = _serial()
        self._serial_module = serial
        try:
            self._port = serial.Serial(port, baud, timeout=0.05)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise BoardUnavailable(f"cannot open {port} at {baud} baud ({exc}); check the port name and that no "
                                   "other program (a terminal, NXP's run.py) holds it") from None
        self.port, self.baud, self.timeout = port, baud, timeout
        self.banner = b""
        self._reader = FrameReader()

    def __enter__(self) -> "ModelRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._port.close()

    def drain_banner(self, quiet: float = 0.3, limit: float = 3.0) -> bytes:
        """Read and keep what the board prints until the line has been quiet for `quiet` seconds (at most `limit`
        seconds): the boot banner, which would otherwise precede the first answer."""
        start = last = time.monotonic()
        while time.monotonic() - last < quiet and time.monotonic() - start < limit:
            chunk = self._port.read(self._port.in_waiting or 1)
            if chunk:
                self.banner += chunk
                last = time.monotonic()
        return self.banner

    def _ask(self, command: int, payload: bytes = b"") -> protocol.Frame:
        step = protocol.COMMAND_NAMES[command]
        frame = encode_frame(command, payload)
        budget = self.timeout + 10 * len(frame) / self.baud  # 8N1: ten bits a byte on the line
        self._port.write_timeout = budget
        try:
            self._port.write(frame)
            self._port.flush()
        except self._serial_module.SerialTimeoutException:
            raise BoardTimeout(f"{step} (sending it)", budget, self.port, self.baud, self.banner) from None
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            try:
                frames = self._reader.feed(self._port.read(self._port.in_waiting or 1))
            except protocol.CrcError as exc:
                raise BoardProtocolError(f"the answer to {step} was damaged ({exc}): check the baud rate (--baud) "
                                         "and the cable") from None
            if frames:
                answer = frames[0]
                if answer.code == protocol.ERROR:
                    raise BoardError(step, *protocol.decode_error(answer.payload))
                return answer
        raise BoardTimeout(step, budget, self.port, self.baud, self.banner)

    def _expect(self, command: int, status: int, payload: bytes = b"") -> bytes:
        answer = self._ask(command, payload)
        if answer.code != status:
            raise BoardProtocolError(f"the board answered {protocol.COMMAND_NAMES[command]} with status "
                                     f"0x{answer.code:02X}, not 0x{status:02X}: is it running the "
                                     "executorch_modelrunner firmware?")
        return answer.payload

    def load_model(self, pte: bytes) -> None:
        self._expect(protocol.LOAD_MODEL, protocol.OK, pte)

    def get_info(self) -> tuple[list[TensorSpec], list[TensorSpec]]:
        payload = self._expect(protocol.GET_INFO, protocol.INFO)
        if not payload:
            raise BoardProtocolError("the board answered GET_INFO with no tensors: it holds no model (was it reset "
                                     "after LOAD_MODEL?); run again")
        return _decoded(protocol.decode_info, payload)

    def load_input(self, data: bytes) -> None:
        self._expect(protocol.LOAD_INPUT, protocol.OK, data)

    def run(self) -> tuple[int, list[tuple[TensorSpec, bytes]]]:
        """(on-board inference time in microseconds, raw outputs). The input is consumed: LOAD_INPUT again first."""
        return _decoded(protocol.decode_result, self._expect(protocol.RUN, protocol.RESULT))


def _decoded(decode, payload: bytes):
    try:
        return decode(payload)
    except protocol.PayloadError as exc:
        raise BoardProtocolError(f"{exc}: is the board running the executorch_modelrunner firmware?") from None

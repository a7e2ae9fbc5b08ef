"""A virtual board: a SIMULATION of NXP's executorch_modelrunner firmware that speaks its serial protocol on a
pseudo-terminal (Linux, macOS) and runs the uploaded .pte with this package's host runtime, so that the board flow
(`run --device`, `evaluate --device`, a CI job) can be tried before an EVK is on the desk.

Like the firmware it answers every command with one frame, keeps the states no model -> model loaded -> input ready
(RUN consumes the input), loads input 0 only, and refuses what the firmware build it mimics refuses: a .pte larger
than its model buffer (0x03), a CPU operator outside its kernel table or a delegate it does not register (0x14),
planned memory beyond its method pool (0x13), an input of the wrong size (0x05), outputs beyond its result buffer
(0x07). It is not a board: the times it reports are this PC's execution times (or `timing_us`), and the NPU
partitions run as the host runtime runs them (host-reference payloads in LiteRT). The boot banner says so; it is
printed each time a program opens the port (the port of a real board prints it at reset only).

The codec is the package's own (protocol.py); the client's tests use a double with framing code of its own.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import protocol
from ..core.atomic import sigint_held
from .protocol import TensorSpec, encode_frame
from .runners import KIB, Finding, Runner, check_pte

BANNER = ("ExecuTorch Modelrunner Ready (virtual board: a simulation on this PC running executorch-neutron's host "
          "runtime; its times are not a board's)")
SIMULATION = ("virtual board: a SIMULATION of NXP's executorch_modelrunner firmware on this PC; programs run with "
              "executorch-neutron's host runtime and the times it reports are this PC's, not a board's")


@dataclass(frozen=True)
class Firmware:
    """The firmware build the virtual board mimics: its kernel table and delegates, and its buffers in bytes."""

    runner: Runner
    model_buffer: int
    timing_us: int | None = None  # report this time for every RUN instead of this PC's execution time

    def describe(self) -> str:
        pool = self.runner.buffers.get("method_pool")
        return (f"firmware: kernel table {self.runner.name} ({len(self.runner.kernels)} operators), delegates "
                f"{', '.join(sorted(self.runner.delegates))}, model buffer {self.model_buffer:,} bytes"
                + (f", method pool {pool // KIB} KiB" if pool else "")
                + (f"; every RUN reports {self.timing_us} us (--timing-us)" if self.timing_us is not None
                   else "; RUN reports this PC's execution time"))


def _error(code: int, message: str) -> tuple[bytes, str]:
    name = protocol.ERROR_CODES.get(code, ("UNKNOWN",))[0]
    return encode_frame(protocol.ERROR, bytes([code]) + message.encode("ascii", "replace")), \
        f"ERROR 0x{code:02X} {name}: {message}"


def _describe(specs: list[TensorSpec]) -> str:
    from ..runtime.dtypes import torch_dtype

    return ", ".join(f"{str(torch_dtype(s.dtype)).removeprefix('torch.')}{list(s.sizes)}" for s in specs)


class VirtualFirmware:
    """The firmware's command handler: `answer(code, payload)` -> (the answer frame, one line saying what it did)."""

    def __init__(self, firmware: Firmware):
        self.firmware = firmware
        self.program = self.inputs = self.outputs = self.input = None

    def answer(self, code: int, payload: bytes) -> tuple[bytes, str]:
        handlers = {protocol.LOAD_MODEL: self.load_model, protocol.LOAD_INPUT: self.load_input,
                    protocol.RUN: lambda _: self.run(), protocol.GET_INFO: lambda _: self.get_info()}
        if code not in handlers:
            return _error(0x02, f"unknown command 0x{code:02X}")
        return handlers[code](payload)

    def load_model(self, pte: bytes) -> tuple[bytes, str]:
        from ..pte import PteError, read_pte

        self.program = self.input = None
        buffers = self.firmware.runner.buffers
        if len(pte) > self.firmware.model_buffer:
            return _error(0x03, f"model {len(pte)} bytes > buffer {self.firmware.model_buffer}")
        try:
            plan = read_pte(pte).program.execution_plan[0]
        except (PteError, IndexError) as exc:
            return _error(0x10, f"Program::load failed ({str(exc)[:80]})")
        findings = check_pte(pte, self.firmware.runner)
        if findings:
            what = [f.operator if isinstance(f, Finding) else f.backend_id for f in findings]
            return _error(0x14, f"load_method failed: not registered: {', '.join(what)}")
        pool = buffers.get("method_pool")
        planned = sum(int(n) for n in plan.non_const_buffer_sizes[1:])
        if pool is not None and planned > pool:
            return _error(0x13, f"planned buffers {planned} bytes > pool {pool}")
        from ..runtime import NeutronRuntimeError, load

        try:
            program = load(pte)
            program.load_method(plan.name)
        except NeutronRuntimeError as exc:
            return _error(0x14, f"load_method failed ({' '.join(str(exc).split())[:120]})")
        self.program, self.method = program, plan.name
        self.inputs = [_spec(plan.values[i].val) for i in plan.inputs]
        self.outputs = [_spec(plan.values[i].val) for i in plan.outputs]
        return encode_frame(protocol.OK), f"OK ({len(pte):,} bytes loaded)"

    def get_info(self) -> tuple[bytes, str]:
        if self.program is None:
            return encode_frame(protocol.INFO), "INFO (no model)"
        return (encode_frame(protocol.INFO, protocol.encode_info(self.inputs, self.outputs)),
                f"INFO: input {_describe(self.inputs)}; output {_describe(self.outputs)}")

    def load_input(self, data: bytes) -> tuple[bytes, str]:
        if self.program is None:
            return _error(0x08, "no model")
        limit = self.firmware.runner.buffers.get("input")
        if len(data) != self.inputs[0].nbytes or (limit is not None and len(data) > limit):
            return _error(0x05, f"input {len(data)} bytes, the program takes {self.inputs[0].nbytes}")
        self.input = data
        return encode_frame(protocol.OK), "OK"

    def run(self) -> tuple[bytes, str]:
        from .tensors import from_board

        if self.program is None or self.input is None:
            return _error(0x08, "no model" if self.program is None else "no input (RUN consumes it)")
        spec = self.inputs[0]
        x = from_board(TensorSpec(spec.dtype, spec.sizes, None, spec.nbytes), self.input, spec, 0)
        self.input = None  # RUN consumes the input
        start = time.perf_counter()
        try:
            outputs = self.program.execute([x], self.method)
        except Exception as exc:  # noqa: BLE001 - the firmware answers 0x07 to any failure of execute()
            return _error(0x07, f"execute failed ({' '.join(str(exc).split())[:120]})")
        micros = int((time.perf_counter() - start) * 1e6)
        if self.firmware.timing_us is not None:
            micros = self.firmware.timing_us
        results = []
        for out, spec in zip(outputs, self.outputs):
            order = spec.dim_order or tuple(range(out.dim()))
            data = out.permute(*order).contiguous().numpy().tobytes()
            results.append((TensorSpec(spec.dtype, tuple(out.shape), None, len(data)), data))
        payload = protocol.encode_result(micros, results)
        limit = self.firmware.runner.buffers.get("result")
        if limit is not None and len(payload) > limit:
            return _error(0x07, f"result {len(payload)} bytes > buffer {limit}")
        return (encode_frame(protocol.RESULT, payload),
                f"RESULT: {len(results)} output(s), {micros} us"
                + (" (--timing-us)" if self.firmware.timing_us is not None else " (this PC's time, not a board's)"))


def _spec(tensor) -> TensorSpec:
    """A program input's or output's INFO entry from its EValue tensor in the .pte."""
    from ..runtime.dtypes import torch_dtype

    sizes = tuple(int(s) for s in tensor.sizes)
    numel = 1
    for s in sizes:
        numel *= s
    order = tuple(int(d) for d in tensor.dim_order) or tuple(range(len(sizes)))
    return TensorSpec(int(tensor.scalar_type), sizes, order, numel * torch_dtype(int(tensor.scalar_type)).itemsize)


def serve(firmware: Firmware, link: str | Path | None = None, say: Callable[[str], None] = print,
          log: Callable[[str], None] | None = print) -> None:
    """Open a pseudo-terminal, say its port (and make `link` a symbolic link to it), and answer the modelrunner
    protocol on it until Ctrl-C or SIGTERM. `log` gets one line per command (None: quiet)."""
    import tty

    master, slave = os.openpty()
    tty.setraw(slave)  # a serial line: no echo, no newline translation (kept after the slave is closed)
    port = os.ttyname(slave)
    os.close(slave)  # the clients open it by name; holding it would make this process one of its users
    link = Path(link) if link else None
    if link is not None:
        if link.is_symlink() and str(os.readlink(link)).startswith("/dev/"):
            link.unlink()  # a link a stopped virtual board left behind
        os.symlink(port, link)

    # Ctrl-C / SIGTERM: finish the command at hand, then stop (no half-written line). A plain list, not a
    # threading.Event: a handler taking the Event's lock while the interrupted loop holds it would deadlock.
    stopping: list[int] = []
    signals = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN else [])
    previous = {sig: signal.signal(sig, lambda signum, frame: stopping.append(signum)) for sig in signals}
    handler = signal.getsignal(signal.SIGTERM)
    say(SIMULATION)
    say(firmware.describe())
    say(f"port: {port}" + (f" (link {link})" if link else "") + f": pass --device {link or port} to "
        "`executorch-neutron run` or `evaluate`; Ctrl-C stops the virtual board")
    board = VirtualFirmware(firmware)
    try:
        # the host runtime loads in seconds; a program that opens the port meanwhile has its bytes kept by the
        # pseudo-terminal and answered next (imports stay in this thread: two threads importing torch and this
        # package at once can deadlock on the import locks)
        with sigint_held():
            _load_runtime()
        say("ready")
        for sig in signals:
            signal.signal(sig, handler)
        _loop(master, board, log, stopping, lambda: [signal.signal(sig, handler) for sig in signals])
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
        os.close(master)
        if link is not None and link.is_symlink() and os.readlink(link) == port:
            link.unlink()
        say(f"virtual board on {port} stopped")


def _load_runtime() -> None:
    from ..pte import read_pte  # noqa: F401 - ExecuTorch's deserializer, which LOAD_MODEL uses
    from ..runtime import bridge

    bridge.ensure_registered()  # the host library built and loaded before the first LOAD_MODEL needs it


def _loop(master: int, board: VirtualFirmware, log, stopping: list, rearm: Callable[[], object]) -> None:
    """Answer frames until `stopping` holds a signal. A program opening the port is seen as the end of the master
    side's EIO (no slave open): the banner is printed then, after pyserial's input flush at open."""
    reader, connected = protocol.FrameReader(), False
    while not stopping:
        readable, _, _ = select.select([master], [], [], 0.05)
        if not readable:
            if not connected:
                connected = True
                _write(master, f"\r\n{BANNER}\r\n".encode())
            continue
        try:
            data = os.read(master, 1 << 16)
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            if connected and log:
                log("port closed")
            reader, connected = protocol.FrameReader(), False
            time.sleep(0.05)
            continue
        connected = True
        for frame in _frames(reader, data):
            if frame is None:
                answer, line, name = *_error(0x01, "crc"), "a damaged frame"
            else:
                name = protocol.COMMAND_NAMES.get(frame.code, f"command 0x{frame.code:02X}")
                name += f" {len(frame.payload):,} bytes" if frame.payload else ""
                answer, line = board.answer(frame.code, frame.payload)
            _write(master, answer)
            rearm()  # the libraries a program loads (the host runtime's, LiteRT) may replace the signal handlers
            if log:
                log(f"{name} -> {line}")


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _frames(reader: protocol.FrameReader, data: bytes):
    """The frames in `data` (with what came before), None for each damaged one."""
    while True:
        try:
            yield from reader.feed(data)
            return
        except protocol.CrcError:
            yield None
            data = b""

"""TEST DOUBLE of NXP's executorch_modelrunner firmware: a process that speaks the board's serial protocol on a
pseudo-terminal and executes the uploaded .pte with our host runtime (`executorch_neutron.runtime`).

It is written from the documented protocol (docs/guide/sources.md, "NXP's board runner"), independently of
`executorch_neutron.board`: frames with struct and `binascii.crc_hqx` (CRC-CCITT with init 0xFFFF is
CRC-16/CCITT-FALSE), the operator table and dim orders read with ExecuTorch's own deserializer. Like the firmware it
answers every command with one frame, keeps the states no model -> model loaded -> input ready (RUN consumes the
input), loads input 0 only, and refuses a model larger than its model buffer (error 0x03) or calling a CPU operator
outside its kernel table (error 0x14).

    python modelrunner_double.py FD [--model-buffer N] [--kernels FILE] [--silent] [--banner-delay S]
                                    [--fault KIND[:STEP]]...

FD is the pseudo-terminal's master file descriptor, inherited. `--silent` reads everything and never answers (the
timeout path). The double prints `ready` on stdout once it can serve, then the boot banner on the line after
`--banner-delay` seconds (the client opens the port in between and must drain it). While the port is closed (no
program holds the terminal's other end) it waits for the next one to open it.

`--fault` injects what a real board and a USB CDC link do, at the answer to STEP (a command name; RUN when left
out): `crc` (the answer's CRC damaged), `truncate` (the answer stops half-way), `huge` (a header announcing
0xFFFFFFF0 bytes), `silent` (no answer), `reboot` (the boot banner instead of an answer, the state reset: a hard
fault or a watchdog), `unplug` (the line closes: the device disappears), `stall` (the double stops reading at that
command's header: the upload blocks), `wrong-shape` / `extra-output` / `wrong-dtype` (a RESULT that disagrees with
GET_INFO), and for every answer: `log` (firmware log text before each frame), `slow` (each frame in 7-byte
pieces, 2 ms apart), `chatter` (log lines every 50 ms from boot on, never quiet). Each command received is printed
on stdout as `got STEP` (`stalled STEP` for a stall), so that a test can act at a known step.
"""

from __future__ import annotations

import argparse
import binascii
import errno
import os
import struct
import sys
import time

BANNER = b"\r\nExecuTorch Modelrunner Ready\r\n"


def frame(code: int, payload: bytes = b"") -> bytes:
    body = bytes([code]) + struct.pack("<I", len(payload)) + payload
    return b"\x55\xaa" + body + struct.pack("<H", binascii.crc_hqx(body, 0xFFFF))


def error(code: int, message: str) -> bytes:
    return frame(0xC0, bytes([code]) + message.encode())


class Line:
    """Frames from the master side of the pseudo-terminal. While no program holds the other end, reading fails
    (EIO): wait for the next one to open it."""

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def _fill(self, n: int) -> None:
        while len(self.buffer) < n:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise EOFError from exc
                time.sleep(0.02)  # the port is closed: wait for the next program to open it
                continue
            if not chunk:
                raise EOFError
            self.buffer += chunk

    def next(self, stall=lambda code: False) -> tuple[int, bytes, bool]:
        """(code, payload, crc ok). stall(code): stop reading once that command's header arrived."""
        while True:
            self._fill(2)
            at = self.buffer.find(b"\x55\xaa")
            if at >= 0:
                self.buffer = self.buffer[at:]
                break
            self.buffer = self.buffer[-1:]
        self._fill(7)
        code, length = struct.unpack_from("<BI", self.buffer, 2)
        if stall(code):
            print(f"stalled {NAMES.get(code, hex(code))}", flush=True)
            while True:
                time.sleep(60)
        self._fill(7 + length + 2)
        body, (crc,) = self.buffer[2:7 + length], struct.unpack_from("<H", self.buffer, 7 + length)
        self.buffer = self.buffer[9 + length:]
        return code, body[5:], crc == binascii.crc_hqx(body, 0xFFFF)


class Firmware:
    def __init__(self, model_buffer: int, kernels: set[str] | None):
        self.model_buffer, self.kernels = model_buffer, kernels
        self.program = self.plan = self.input = None

    def _spec(self, value_index: int, nbytes: int, with_order: bool) -> bytes:
        tensor = self.plan.values[value_index].val
        sizes, order = list(tensor.sizes), list(tensor.dim_order)
        out = struct.pack(f"<BB{len(sizes)}i", int(tensor.scalar_type), len(sizes), *sizes)
        return out + (bytes(order) if with_order else b"") + struct.pack("<I", nbytes)

    def load_model(self, pte: bytes) -> bytes:
        from executorch.exir._serialize._program import deserialize_pte_binary

        from executorch_neutron.runtime import load

        self.program = self.input = None
        if len(pte) > self.model_buffer:
            return error(0x03, "load_model")
        plan = deserialize_pte_binary(pte).program.execution_plan[0]
        names = {f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators}
        if self.kernels is not None and names - self.kernels:
            return error(0x14, "load_model")
        self.program, self.plan = load(pte), plan
        return frame(0x81)

    def get_info(self) -> bytes:
        if self.program is None:
            return frame(0x82)
        meta = self.program._method("forward").metadata
        payload = bytes([meta.num_inputs()]) + b"".join(
            self._spec(v, meta.input_tensor_meta(i).nbytes(), True) for i, v in enumerate(self.plan.inputs))
        payload += bytes([meta.num_outputs()]) + b"".join(
            self._spec(v, meta.output_tensor_meta(i).nbytes(), True) for i, v in enumerate(self.plan.outputs))
        return frame(0x82, payload)

    def load_input(self, data: bytes) -> bytes:
        if self.program is None:
            return error(0x08, "no model")
        if len(data) != self.program._method("forward").metadata.input_tensor_meta(0).nbytes():
            return error(0x05, "load_input")
        self.input = data
        return frame(0x81)

    def run(self) -> bytes:
        import torch

        from executorch_neutron.runtime.dtypes import torch_dtype

        if self.program is None or self.input is None:
            return error(0x08, "no input")
        tensor = self.plan.values[self.plan.inputs[0]].val
        order = list(tensor.dim_order)
        physical = torch.frombuffer(bytearray(self.input), dtype=torch_dtype(int(tensor.scalar_type)))
        inverse = sorted(range(len(order)), key=order.__getitem__)
        x = physical.reshape([tensor.sizes[d] for d in order]).permute(*inverse)
        start = time.perf_counter()
        try:
            outputs = self.program.execute([x])
        except Exception:  # noqa: BLE001 - the firmware answers 0x07 to any failure of execute()
            return error(0x07, "run")
        micros = int((time.perf_counter() - start) * 1e6)
        self.input = None  # RUN consumes the input
        payload = struct.pack("<QB", micros, len(outputs))
        for value_index, out in zip(self.plan.outputs, outputs):
            order = list(self.plan.values[value_index].val.dim_order)
            data = out.permute(*order).contiguous().numpy().tobytes()
            payload += struct.pack(f"<BB{out.dim()}iI", int(self.plan.values[value_index].val.scalar_type), out.dim(),
                                   *out.shape, len(data)) + data
        return frame(0x83, payload)

    def answer(self, code: int, payload: bytes) -> bytes:
        handlers = {0x01: lambda: self.load_model(payload), 0x02: lambda: self.load_input(payload),
                    0x03: self.run, 0x04: self.get_info}
        return handlers[code]() if code in handlers else error(0x02, "unknown cmd")


STEPS = {"LOAD_MODEL": 0x01, "LOAD_INPUT": 0x02, "RUN": 0x03, "GET_INFO": 0x04}
NAMES = {code: name for name, code in STEPS.items()}
EVERY_ANSWER = ("log", "slow", "chatter")
AT_A_STEP = ("crc", "truncate", "huge", "silent", "reboot", "unplug", "stall", "wrong-shape", "extra-output",
             "wrong-dtype")


def parse_fault(text: str) -> tuple[str, int | None]:
    kind, _, step = text.partition(":")
    if kind not in EVERY_ANSWER + AT_A_STEP:
        raise argparse.ArgumentTypeError(f"unknown fault {kind!r}")
    return kind, None if kind in EVERY_ANSWER else STEPS[step or "RUN"]


def wrong_result(kind: str, answer: bytes) -> bytes:
    """A RESULT frame rebuilt so that it disagrees with GET_INFO (parsed here with struct, not the client's code)."""
    (length,) = struct.unpack_from("<I", answer, 3)
    payload = answer[7:7 + length]
    micros, count = struct.unpack_from("<QB", payload)
    dtype, ndim = payload[9], payload[10]
    sizes = list(struct.unpack_from(f"<{ndim}i", payload, 11))
    (nbytes,) = struct.unpack_from("<I", payload, 11 + 4 * ndim)
    data = payload[15 + 4 * ndim:15 + 4 * ndim + nbytes]
    rest = payload[15 + 4 * ndim + nbytes:]
    if kind == "wrong-shape":  # the last dimension halved: a firmware built for another model, a stale result
        keep = nbytes // sizes[-1] * (sizes[-1] // 2)
        sizes[-1] //= 2
        data, nbytes = data[:keep], keep
    elif kind == "wrong-dtype":  # the same bytes announced as int8
        dtype = 1 if dtype != 1 else 0
    out = struct.pack(f"<QBBB{ndim}iI", micros, count + (kind == "extra-output"), dtype, ndim, *sizes, nbytes) + data
    out += rest + (struct.pack("<BBiI", 1, 1, 4, 4) + b"\x00" * 4 if kind == "extra-output" else b"")
    return frame(0x83, out)


class Board:
    """The serial side of the double: waits for the port to be opened, writes answers (with the faults asked for)."""

    def __init__(self, fd: int, faults: list[tuple[str, int | None]]):
        self.fd, self.faults = fd, faults
        self.every = {kind for kind, step in faults if step is None}

    def fault(self, code: int) -> str | None:
        return next((kind for kind, step in self.faults if step == code), None)

    def write(self, data: bytes) -> None:
        if "log" in self.every:
            data = b"[fw] heap 12345 free\r\n" + data
        if "slow" not in self.every:
            os.write(self.fd, data)
            return
        for at in range(0, len(data), 7):
            os.write(self.fd, data[at:at + 7])
            time.sleep(0.002)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("fd", type=int)
    p.add_argument("--model-buffer", type=int, default=384 * 1024)
    p.add_argument("--kernels", help="the kernel table: one operator name per line (default: every kernel)")
    p.add_argument("--silent", action="store_true")
    p.add_argument("--banner-delay", type=float, default=0.2)
    p.add_argument("--fault", type=parse_fault, action="append", default=[])
    args = p.parse_args(argv)
    kernels = None
    if args.kernels:
        with open(args.kernels) as f:
            kernels = {line.split("#")[0].strip() for line in f} - {""}
    from executorch_neutron.runtime import bridge

    bridge.ensure_registered()  # the host library built and loaded before `ready`: answers must not wait for it

    firmware, line, board = Firmware(args.model_buffer, kernels), Line(args.fd), Board(args.fd, args.fault)
    print("ready", flush=True)
    time.sleep(args.banner_delay)
    os.write(args.fd, BANNER)
    if "chatter" in board.every:
        import threading

        def chatter():
            while True:
                time.sleep(0.05)
                os.write(args.fd, b"[fw] still booting\r\n")

        threading.Thread(target=chatter, daemon=True).start()
    try:
        while True:
            code, payload, crc_ok = line.next(stall=lambda c: board.fault(c) == "stall")
            print(f"got {NAMES.get(code, hex(code))}", flush=True)
            kind = board.fault(code)
            if args.silent or kind == "silent":
                continue
            if kind == "unplug":
                os.close(args.fd)  # the client's end reads no more data: the device is gone
                time.sleep(60)
                return 0
            if kind == "reboot":
                firmware = Firmware(args.model_buffer, kernels)
                time.sleep(0.05)
                os.write(args.fd, b"\x00" + BANNER)
                continue
            answer = firmware.answer(code, payload) if crc_ok else frame(0xC0, bytes([0x01]))
            if kind in ("wrong-shape", "extra-output", "wrong-dtype") and answer[2] == 0x83:
                answer = wrong_result(kind, answer)
            elif kind == "crc":
                answer = answer[:-2] + bytes([answer[-2] ^ 0xFF, answer[-1]])
            elif kind == "truncate":
                answer = answer[:7 + (len(answer) - 7) // 2]  # the header and half the rest
            elif kind == "huge":
                answer = b"\x55\xaa" + bytes([answer[2]]) + struct.pack("<I", 0xFFFFFFF0) + answer[7:40]
            board.write(answer)
    except (EOFError, OSError):  # the test closed the terminal
        return 0


if __name__ == "__main__":
    sys.exit(main())

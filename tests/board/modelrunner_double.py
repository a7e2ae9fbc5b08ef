"""TEST DOUBLE of NXP's executorch_modelrunner firmware: a process that speaks the board's serial protocol on a
pseudo-terminal and executes the uploaded .pte with our host runtime (`executorch_neutron.runtime`).

It is written from the documented protocol (../shared/FACTS.md, "NXP's board runner"), independently of
`executorch_neutron.board`: frames with struct and `binascii.crc_hqx` (CRC-CCITT with init 0xFFFF is
CRC-16/CCITT-FALSE), the operator table and dim orders read with ExecuTorch's own deserializer. Like the firmware it
answers every command with one frame, keeps the states no model -> model loaded -> input ready (RUN consumes the
input), loads input 0 only, and refuses a model larger than its model buffer (error 0x03) or calling a CPU operator
outside its kernel table (error 0x14).

    python modelrunner_double.py FD [--model-buffer N] [--kernels FILE] [--silent] [--banner-delay S]

FD is the pseudo-terminal's master file descriptor, inherited. `--silent` reads everything and never answers (the
timeout path). The double prints `ready` on stdout once it can serve, then the boot banner on the line after
`--banner-delay` seconds (the client opens the port in between and must drain it).
"""

from __future__ import annotations

import argparse
import binascii
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
    """Frames from the master side of the pseudo-terminal."""

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def _fill(self, n: int) -> None:
        while len(self.buffer) < n:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk

    def next(self) -> tuple[int, bytes, bool]:
        """(code, payload, crc ok)."""
        while True:
            self._fill(2)
            at = self.buffer.find(b"\x55\xaa")
            if at >= 0:
                self.buffer = self.buffer[at:]
                break
            self.buffer = self.buffer[-1:]
        self._fill(7)
        code, length = struct.unpack_from("<BI", self.buffer, 2)
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("fd", type=int)
    p.add_argument("--model-buffer", type=int, default=384 * 1024)
    p.add_argument("--kernels", help="the kernel table: one operator name per line (default: every kernel)")
    p.add_argument("--silent", action="store_true")
    p.add_argument("--banner-delay", type=float, default=0.2)
    args = p.parse_args(argv)
    kernels = None
    if args.kernels:
        with open(args.kernels) as f:
            kernels = {line.split("#")[0].strip() for line in f} - {""}
    from executorch_neutron.runtime import bridge

    bridge.ensure_registered()  # the host library built and loaded before `ready`: answers must not wait for it

    firmware, line = Firmware(args.model_buffer, kernels), Line(args.fd)
    print("ready", flush=True)
    time.sleep(args.banner_delay)
    os.write(args.fd, BANNER)
    try:
        while True:
            code, payload, crc_ok = line.next()
            if args.silent:
                continue
            os.write(args.fd, firmware.answer(code, payload) if crc_ok else frame(0xC0, bytes([0x01])))
    except (EOFError, OSError):  # the test closed the terminal
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""`run_on_board`: a .pte and the inputs a host run takes -> the outputs the host run would return, computed on a
board running NXP's executorch_modelrunner firmware, plus the on-board inference times.

Before uploading: every CPU operator of the .pte must be in the runner's kernel table (runners.py) and the .pte
must fit the firmware's model buffer where the runner knows it; a delegate compiled without the eIQ Neutron SDK
(a host-reference payload) is warned about; a non-tensor input is refused, as the host run refuses it. Float inputs of
a quantized-I/O .pte are quantized with the qparams it holds and its outputs dequantized, as the host run does
(`runtime.host.quantize_inputs`, the same reader and functions). Then: drain the boot banner, LOAD_MODEL, GET_INFO,
and per repetition LOAD_INPUT + RUN (RUN consumes the input); each RESULT is checked against GET_INFO by the client.
Every error frame becomes one `BoardRunError` line naming the cause for this .pte and what to do; link faults are the
client's one-line errors (client.py). `run_samples_on_board` runs many samples in one session (one upload).
"""

from __future__ import annotations

import logging
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from ..runtime.host import dequantize_outputs, quantize_inputs
from .client import BoardError, BoardProtocolError, ModelRunner
from .protocol import TensorSpec
from .runners import KIB, Runner, check_pte, load_runner, too_big
from .qparams import quantized_io
from .tensors import check_tensors, from_board, to_board

log = logging.getLogger("executorch_neutron")


class BoardRunError(RuntimeError):
    """A .pte the board did not run: one line with the cause and what to do."""


class WillNotLoad(BoardRunError):
    """A .pte refused before uploading: it cannot load on the runner (missing kernels, too large)."""


@dataclass
class BoardRun:
    outputs: list[torch.Tensor]  # as `executorch_neutron.runtime.run` returns them
    times_us: list[int]  # on-board inference time of each RUN (the firmware's DWT cycle counter; no transfer)
    inputs_info: list[TensorSpec]
    outputs_info: list[TensorSpec]
    banner: str

    def timing(self) -> str:
        t = sorted(self.times_us)
        if len(t) == 1:
            return f"on-board time: {t[0]} us"
        if len(t) < 10:
            return (f"on-board time over {len(t)} runs: min {t[0]} us, median {statistics.median(t):g} us, "
                    f"max {t[-1]} us")
        p90 = t[math.ceil(0.9 * len(t)) - 1]  # nearest rank
        return (f"on-board time over {len(t)} runs: p50 {statistics.median(t):g} us, p90 {p90} us, max {t[-1]} us "
                f"(min {t[0]} us)")


def preflight(pte: bytes, runner: Runner) -> None:
    """Refuse a .pte that cannot load on `runner` (missing kernels, too large), before any upload."""
    findings = check_pte(pte, runner)
    if findings:
        raise WillNotLoad("; ".join(map(str, findings)))
    reason = too_big(len(pte), runner)
    if reason:
        raise WillNotLoad(f"{reason}: the board would refuse it (error 0x03); shrink the model or enlarge the "
                            "firmware's model buffer and rebuild it")
    from ..pte import inspect_pte

    summary = inspect_pte(pte)
    if len(summary.methods[0].inputs) != 1:
        raise WillNotLoad(f"the program takes {len(summary.methods[0].inputs)} inputs; the modelrunner protocol "
                          "carries one input tensor (the firmware sets input 0 only): export a single-input model to "
                          "run it on this firmware")
    for d in summary.delegates:
        if d.kind == "host-reference":
            log.warning("warning: delegate %d is a host-reference payload (compiled without NXP's eIQ Neutron SDK): "
                        "the board's NeutronBackend cannot run it and load_method fails (error 0x14); compile with "
                        "the SDK installed for device microcode", d.index)


def _explain(exc: BoardError, pte: bytes, runner: Runner, inputs_info: list[TensorSpec] | None) -> str:
    """One line for an ERROR frame: what it means for this .pte on this runner, and what to do."""
    code, buffers = exc.code, runner.buffers
    if code == 0x03:
        limit = buffers.get("model")
        if limit and len(pte) > limit:
            size = f", {len(pte) - limit:,} bytes over the {limit:,}-byte model buffer of {runner.name}"
        elif limit:
            size = f" (so the firmware on the board has a smaller model buffer than {runner.name}'s {limit:,} bytes)"
        else:
            size = ""
        return (f"{exc}: the .pte is {len(pte):,} bytes{size}; shrink the model or enlarge the firmware's model "
                "buffer (kPteBufSize in executorch_engine.cpp) and rebuild it")
    if code == 0x14:
        findings = check_pte(pte, runner)
        if findings:
            return f"{exc}: " + "; ".join(map(str, findings))
        stock = load_runner("modelrunner")
        findings = check_pte(pte, stock) if runner.kernels != stock.kernels else []
        if findings:  # a custom table was given, but the board may run NXP's own firmware
            return (f"{exc}: every CPU operator of the .pte is in {runner.name}'s kernel table, but the board may run "
                    "NXP's stock firmware: " + "; ".join(map(str, findings)))
        return (f"{exc}: every CPU operator of the .pte is in {runner.name}'s kernel table, so the firmware on the "
                "board registers another table (check with --runner FILE listing its kernels) or a delegate could "
                "not be initialised (a .pte compiled without the eIQ Neutron SDK holds host-reference payloads the "
                "board cannot run: compile with the SDK)")
    if code == 0x13 and "method_pool" in buffers:
        return (f"{exc}: the method's planned memory and allocations exceed the firmware's method pool "
                f"({buffers['method_pool'] // KIB} KiB in {runner.name}); use a smaller model or enlarge kPoolSize in "
                "executorch_engine.cpp and rebuild the firmware")
    if code == 0x05 and inputs_info:
        limit = buffers.get("input")
        return (f"{exc}: the program's input is {inputs_info[0].nbytes:,} bytes"
                + (f" and the firmware's input buffer {limit:,} bytes" if limit else "")
                + "; check the input against `executorch-neutron report MODEL.pte`")
    if code == 0x10:
        return (f"{exc}: the ExecuTorch in the firmware cannot parse this .pte: rebuild the firmware with the "
                "ExecuTorch release that wrote it, or check the upload (--baud, cable)")
    if code == 0x01:
        return f"{exc}: a frame was damaged on the way to the board; check the baud rate (--baud) and the cable"
    if code == 0x07:
        limit = buffers.get("result")
        return (f"{exc}: the method failed on the board" + (f" (or its outputs exceed the {limit:,}-byte result "
                                                            "buffer)" if limit else "")
                + "; run the .pte on the host (`executorch-neutron run MODEL.pte`) to see whether it executes there")
    return f"{exc}; reset the board and run again"


def run_on_board(pte: str | Path | bytes, inputs: Sequence[torch.Tensor], port: str, baud: int = 115200,
                 repeat: int = 1, runner: str | Path | Runner = "modelrunner", timeout: float = 10.0) -> BoardRun:
    """Run `pte` on the board at `port` with `inputs` (as `executorch_neutron.runtime.run` takes them), `repeat`
    times; returns the last run's outputs and every run's on-board time."""
    if repeat < 1:
        raise BoardRunError(f"repeat={repeat}: at least one run is needed")
    return run_samples_on_board(pte, [inputs], port, baud, runner, timeout, repeat=repeat)[0]


def run_samples_on_board(pte: str | Path | bytes, samples: Sequence[Sequence[torch.Tensor]], port: str,
                         baud: int = 115200, runner: str | Path | Runner = "modelrunner", timeout: float = 10.0, *,
                         repeat: int = 1, progress=None) -> list[BoardRun]:
    """Run `pte` on every sample (a sequence of inputs, as `run_on_board` takes them) in one session: the model is
    uploaded once, then each sample is loaded and run `repeat` times; one BoardRun per sample. `progress`: a
    tqdm-like factory for a bar over the samples."""
    data = bytes(pte) if isinstance(pte, (bytes, bytearray, memoryview)) else Path(pte).read_bytes()
    runner = runner if isinstance(runner, Runner) else load_runner(runner)
    preflight(data, runner)
    for inputs in samples:
        check_tensors(inputs)
        if len(inputs) != 1:
            raise BoardRunError(f"{len(inputs)} inputs given; the program takes one")
    qparams = quantized_io(data)  # float inputs of a quantized-I/O .pte: float outputs, as the host run gives
    samples = [quantize_inputs(inputs, qparams) for inputs in samples]
    inputs_info, results = None, []
    with ModelRunner(port, baud, timeout, buffers=runner.buffers) as board:
        board.drain_banner()
        try:
            board.load_model(data)
            inputs_info, outputs_info = board.get_info()
            if len(inputs_info) != 1:
                raise BoardProtocolError(f"the board reports {len(inputs_info)} inputs for a program of one: is it "
                                         "running the executorch_modelrunner firmware?")
            for inputs, from_float in progress(samples, desc="on the board", unit="sample") if progress else samples:
                results.append((*_run_sample(board, to_board(inputs[0], inputs_info[0], 0), repeat), from_float))
        except BoardError as exc:
            raise BoardRunError(_explain(exc, data, runner, inputs_info)) from None
    banner = board.banner.decode("ascii", "replace").strip()
    runs = []
    for times, raw, from_float in results:
        outputs = [from_board(spec, blob, outputs_info[i] if i < len(outputs_info) else None, i)
                   for i, (spec, blob) in enumerate(raw)]
        runs.append(BoardRun(dequantize_outputs(outputs, qparams) if from_float else outputs, times, inputs_info,
                             outputs_info, banner))
    return runs


def _run_sample(board: ModelRunner, payload: bytes, repeat: int) -> tuple[list[int], list]:
    """LOAD_INPUT + RUN `repeat` times (RUN consumes the input): every run's time and the last run's outputs."""
    times, raw = [], []
    for _ in range(repeat):
        board.load_input(payload)
        t, raw = board.run()
        times.append(t)
    return times, raw

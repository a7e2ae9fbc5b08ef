"""Execute one delegate call on the host: a host-reference payload (core/payload.py) run in LiteRT (reference kernels).

It honours the payload header exactly as the device runtime does:
- payload input i reads delegate argument `input_args[i]`; when `input_formats[i] == 1` and the tensor is 4-D in
  NCHW (contiguous) order it is transposed to NHWC; a tensor whose dim order is already channels-last is passed
  straight through; an unflagged tensor must be contiguous;
- payload output j is written to argument `n_args + output_args[j]`, transposed NHWC -> NCHW when
  `output_formats[j] == 1` (written straight into a channels-last destination);
- the TFLite subgraph's inputs/outputs are the payload's inputs/outputs, in order.
Every size, dtype and byte count is checked before any byte is written; a mismatch raises `ExecutionError`
with an ExecuTorch error code and a message, never an out-of-bounds access.

Two hooks serve a host run in a worker process (runtime/isolated.py): `REFERENCES` maps the SHA-256 of a delegate
blob to the host-reference payload to run instead (lower()'s host check of a device-microcode program runs the TFLite
the SDK was given), and `CALL_LISTENER`, when set, is told about each delegate call (blob digest and arguments)
before anything of it runs, so that a crash inside LiteRT can be attributed to its partition.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..core.payload import Header, PayloadError, unpack
from ..backends import UnknownPayloadError, for_blob
from ..tflite.layout import NCHW_TO_NHWC, NHWC_TO_NCHW, from_channels_last, to_channels_last
from .dtypes import NUMPY_DTYPES
from .long_softmax import host_form

# ExecuTorch error codes (runtime/core/error.h)
INTERNAL, NOT_SUPPORTED, INVALID_ARGUMENT, INVALID_PROGRAM, DELEGATE_INCOMPATIBLE = 0x01, 0x10, 0x12, 0x23, 0x30

NCHW, NHWC = (0, 1, 2, 3), NCHW_TO_NHWC  # dim orders


class ExecutionError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Arg:
    """One delegate argument: a tensor's storage described by pointer, byte size, dtype, sizes and dim order."""

    is_tensor: bool
    data: int = 0
    nbytes: int = 0
    dtype: int = -1
    sizes: tuple[int, ...] = ()
    dim_order: tuple[int, ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.sizes)

    def physical(self, what: str) -> np.ndarray:
        """A writable array over the storage, axes in memory (dim) order; checks everything first."""
        if not self.is_tensor:
            raise ExecutionError(INVALID_PROGRAM, f"{what} is not a tensor")
        if self.dtype not in NUMPY_DTYPES:
            raise ExecutionError(NOT_SUPPORTED, f"{what} has ExecuTorch dtype code {self.dtype}, which the host "
                                                f"runtime does not handle")
        if sorted(self.dim_order) != list(range(self.ndim)) or any(s < 0 for s in self.sizes):
            raise ExecutionError(INVALID_ARGUMENT, f"{what} has sizes {self.sizes} and an invalid dim order "
                                                   f"{self.dim_order}")
        dtype = NUMPY_DTYPES[self.dtype]
        numel = math.prod(self.sizes)
        if self.nbytes != numel * dtype.itemsize:
            raise ExecutionError(INVALID_ARGUMENT, f"{what} holds {self.nbytes} bytes but sizes {self.sizes} of "
                                                   f"{dtype} need {numel * dtype.itemsize}")
        shape = tuple(self.sizes[d] for d in self.dim_order)
        if numel == 0:
            return np.empty(shape, dtype)
        if not self.data:
            raise ExecutionError(INVALID_ARGUMENT, f"{what} has no storage (null data pointer)")
        storage = (ctypes.c_char * self.nbytes).from_address(self.data)
        return np.frombuffer(storage, dtype=dtype, count=numel).reshape(shape)


@dataclass
class _Program:
    header: Header
    interpreter: object
    inputs: list[dict]
    outputs: list[dict]


#: SHA-256 of a delegate blob -> the host-reference payload to run for it (see the module docstring)
REFERENCES: dict[str, bytes] = {}
#: called as CALL_LISTENER(blob digest, args) before each delegate call runs (see the module docstring)
CALL_LISTENER: Callable[[str, Sequence["Arg"]], None] | None = None


def _host_blob(blob: bytes, digest: str | None = None) -> bytes:
    """What the host runs for a delegate blob, as its back end says (e.g. a reference stored beside the payload);
    a blob no back end claims, or one its back end cannot run on the host, is refused with the back end's words."""
    if digest is not None and digest in REFERENCES:
        return REFERENCES[digest]
    try:
        backend = for_blob(blob)
    except UnknownPayloadError as exc:
        raise ExecutionError(INVALID_PROGRAM, f"host executor: {exc}") from None
    found = backend.host_blob(blob)
    if found is None:
        raise ExecutionError(DELEGATE_INCOMPATIBLE, backend.device_only)
    return found


def _load_program(blob: bytes, preserve_all_tensors: bool = False, rounding_once: bool = False) -> _Program:
    """A host-reference payload (what `_host_blob` resolved) loaded into a LiteRT interpreter: its reference kernels,
    or with `rounding_once` its default kernels and XNNPACK delegate (see `run_reference_payload`)."""
    try:
        payload = unpack(blob)
    except PayloadError as exc:
        raise ExecutionError(INVALID_PROGRAM, f"host executor: invalid delegate payload: {exc}; re-export the "
                                              f".pte with executorch_neutron") from None
    if not payload.is_reference:
        raise ExecutionError(DELEGATE_INCOMPATIBLE, "host executor: the payload is not a host-reference payload (it "
                                                    "is for the device): re-export the .pte for the host")
    try:
        tflite = payload.tflite
    except PayloadError as exc:
        raise ExecutionError(INVALID_PROGRAM, f"host executor: invalid host-reference payload: {exc}") from None
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    try:
        resolver = OpResolverType.AUTO if rounding_once else OpResolverType.BUILTIN_REF
        interpreter = Interpreter(model_content=host_form(tflite), experimental_op_resolver_type=resolver,
                                  experimental_preserve_all_tensors=preserve_all_tensors)
        interpreter.allocate_tensors()
        inputs, outputs = interpreter.get_input_details(), interpreter.get_output_details()
    except Exception as exc:  # noqa: BLE001 - LiteRT reports malformed models with several exception types
        raise ExecutionError(INVALID_PROGRAM, f"host executor: LiteRT cannot load the payload's TFLite: "
                                              f"{str(exc).strip()}; re-export the .pte") from None
    header = payload.header
    if len(inputs) != header.n_inputs or len(outputs) != header.n_outputs:
        raise ExecutionError(INVALID_PROGRAM, f"host executor: the payload header declares {header.n_inputs} "
                                              f"inputs and {header.n_outputs} outputs but its TFLite has "
                                              f"{len(inputs)} and {len(outputs)}")
    return _Program(header, interpreter, inputs, outputs)


def _to_tflite_layout(arg: Arg, flag: int, what: str) -> np.ndarray:
    phys = arg.physical(what)
    contiguous = tuple(range(arg.ndim))
    if flag == 1 and arg.ndim == 4:
        if arg.dim_order == NHWC:
            return phys  # already channels-last in memory
        if arg.dim_order == NCHW:
            return np.transpose(phys, NCHW_TO_NHWC)
        raise ExecutionError(INVALID_ARGUMENT, f"{what} has dim order {arg.dim_order}; a channels-last input "
                                               f"must be NCHW-contiguous or channels-last")
    if arg.dim_order != contiguous:
        raise ExecutionError(INVALID_ARGUMENT, f"{what} has dim order {arg.dim_order}; a tensor without a format "
                                               f"flag must be contiguous")
    return phys


def _from_tflite_layout(arg: Arg, flag: int, value: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(destination view, source array in the destination's memory order), checked for shape and dtype."""
    dest = arg.physical(what)
    if flag == 1 and arg.ndim == 4 and value.ndim == 4:
        if arg.dim_order == NHWC:
            src = value
        elif arg.dim_order == NCHW:
            src = np.transpose(value, NHWC_TO_NCHW)
        else:
            raise ExecutionError(INVALID_ARGUMENT, f"{what} has dim order {arg.dim_order}; a channels-last "
                                                   f"output must be NCHW-contiguous or channels-last")
    elif arg.dim_order != tuple(range(arg.ndim)):
        raise ExecutionError(INVALID_ARGUMENT, f"{what} has dim order {arg.dim_order}; a tensor without a "
                                               f"format flag must be contiguous")
    else:
        src = value
    if src.shape != dest.shape or src.dtype != dest.dtype:
        raise ExecutionError(INVALID_ARGUMENT, f"{what} is {dest.dtype}{list(arg.sizes)} (dim order "
                                               f"{arg.dim_order}) but the partition produces {value.dtype}"
                                               f"{list(value.shape)} (format flag {flag})")
    return dest, src


def run_program(program: _Program, args: Sequence[Arg]) -> None:
    header, interp = program.header, program.interpreter
    needed = max(header.n_args, header.n_args + max(header.output_args) + 1)
    if len(args) < needed:
        raise ExecutionError(INVALID_PROGRAM, f"host executor: the payload header needs {needed} delegate "
                                              f"arguments ({header.n_args} inputs, outputs at "
                                              f"{list(header.output_args)}) but the call has {len(args)}")
    for i, detail in enumerate(program.inputs):
        k = header.input_args[i]
        what = f"payload input {i} (delegate argument {k})"
        value = _to_tflite_layout(args[k], header.input_formats[i], what)
        expected = tuple(int(s) for s in detail["shape"])
        if value.shape != expected or value.dtype != np.dtype(detail["dtype"]):
            raise ExecutionError(INVALID_ARGUMENT, f"{what} is {value.dtype}{list(value.shape)} in the "
                                                   f"partition's layout but the partition expects "
                                                   f"{np.dtype(detail['dtype'])}{list(expected)}")
        interp.set_tensor(detail["index"], np.ascontiguousarray(value))
    try:
        interp.invoke()
    except Exception as exc:  # noqa: BLE001
        raise ExecutionError(INTERNAL, f"host executor: LiteRT failed to run the partition: {exc}") from None
    writes = []
    for j, detail in enumerate(program.outputs):
        k = header.n_args + header.output_args[j]
        what = f"payload output {j} (delegate argument {k})"
        writes.append(_from_tflite_layout(args[k], header.output_formats[j], interp.get_tensor(detail["index"]), what))
    for dest, src in writes:  # all checked: now write
        np.copyto(dest, src)


class Executor:
    """Runs delegate calls; keeps one LiteRT interpreter per distinct blob (LRU of `capacity`)."""

    def __init__(self, capacity: int = 8):
        self._capacity = capacity
        self._by_digest: OrderedDict[str, _Program] = OrderedDict()
        self._by_handle: dict[int, str] = {}
        self._origin: dict[int, str] = {}  # handle -> SHA-256 of the blob the program gave it
        self._lock = threading.Lock()

    def execute(self, handle_id: int, get_blob: Callable[[], bytes], args: Sequence[Arg]) -> None:
        with self._lock:
            if CALL_LISTENER is not None:
                if handle_id not in self._origin:
                    self._origin[handle_id] = hashlib.sha256(get_blob()).hexdigest()
                CALL_LISTENER(self._origin[handle_id], args)
            program = self._program(handle_id, get_blob)
            run_program(program, args)

    def release(self, handle_id: int) -> None:
        with self._lock:
            self._by_handle.pop(handle_id, None)
            self._origin.pop(handle_id, None)

    def _program(self, handle_id: int, get_blob: Callable[[], bytes]) -> _Program:
        digest = self._by_handle.get(handle_id)
        if digest is None or digest not in self._by_digest:
            raw = get_blob()
            blob = _host_blob(raw, hashlib.sha256(raw).hexdigest() if REFERENCES else None)  # as its program said
            digest = hashlib.sha256(blob).hexdigest()
            if digest not in self._by_digest:
                self._by_digest[digest] = _load_program(blob)
                while len(self._by_digest) > self._capacity:
                    self._by_digest.popitem(last=False)
            self._by_handle[handle_id] = digest
        self._by_digest.move_to_end(digest)
        return self._by_digest[digest]


def run_reference_payload(blob: bytes, inputs: Sequence[np.ndarray], keep_intermediates: bool = False,
                          rounding_once: bool = False):
    """Run a host-reference payload once on int8 arrays in PyTorch (logical) layout, one per payload input in
    header order (numerics' per-partition and per-op comparisons). Returns its outputs in logical layout, and with
    `keep_intermediates` also the LiteRT interpreter, whose every tensor can then be read (`get_tensor(index)`).

    `rounding_once`: run the same TFLite in LiteRT's default kernels with its XNNPACK delegate instead of the
    reference kernels. XNNPACK requantizes an int8 accumulator once (a float32 scale, one rounding to nearest);
    the reference kernels round twice (a rounding doubling high multiply by the 31-bit multiplier, then a rounding
    right shift), which is what the NPUs follow (Vela compiles int8 convolutions in the Ethos-U's TensorFlow Lite
    rounding mode). PyTorch's quantized model rounds once too: this run is the same program in its arithmetic."""
    program = _load_program(blob, preserve_all_tensors=keep_intermediates, rounding_once=rounding_once)
    header, interp = program.header, program.interpreter
    for i, detail in enumerate(program.inputs):
        interp.set_tensor(detail["index"], to_channels_last(np.asarray(inputs[i]), header.input_formats[i]))
    interp.invoke()
    outputs = [from_channels_last(interp.get_tensor(d["index"]), header.output_formats[j])
               for j, d in enumerate(program.outputs)]
    return (outputs, interp) if keep_intermediates else outputs

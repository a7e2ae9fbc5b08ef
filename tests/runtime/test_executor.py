"""The host executor alone (no C++, no .pte): header semantics, layouts, checks before writes, caching."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from tflite_fixtures import add_const_float, add_relu_int8, run_litert, two_in_two_out_float

from executorch_neutron.core.payload import MICROCODE_MAGIC, Header, Payload, pack
from executorch_neutron.neutron.plugin import DEVICE_ONLY as MICROCODE_REFUSAL
from executorch_neutron.runtime.executor import (
    DELEGATE_INCOMPATIBLE,
    INVALID_ARGUMENT,
    INVALID_PROGRAM,
    NOT_SUPPORTED,
    Arg,
    ExecutionError,
    Executor,
)

pytestmark = pytest.mark.fast

CODES = {np.dtype(np.uint8): 0, np.dtype(np.int8): 1, np.dtype(np.int32): 3, np.dtype(np.float32): 6}
NCHW, NHWC = (0, 1, 2, 3), (0, 2, 3, 1)


class Storage:
    """Delegate arguments backed by numpy arrays (kept alive here), described like the C++ side does."""

    def __init__(self):
        self.keep = []

    def tensor(self, logical: np.ndarray, dim_order=None) -> Arg:
        order = tuple(dim_order or range(logical.ndim))
        phys = np.ascontiguousarray(logical.transpose(order))
        self.keep.append(phys)
        return Arg(True, phys.ctypes.data, phys.nbytes, CODES[phys.dtype], logical.shape, order)

    def empty(self, shape, dtype=np.float32, dim_order=None) -> Arg:
        return self.tensor(np.full(shape, -7, dtype), dim_order)

    def logical(self, arg: Arg) -> np.ndarray:
        phys = next(p for p in self.keep if p.ctypes.data == arg.data)
        return phys.transpose(np.argsort(arg.dim_order))


def execute(blob: bytes, args, executor=None, handle=1):
    (executor or Executor()).execute(handle, lambda: blob, args)


C = np.array([1, 20, 300], np.float32)
ADD_C = add_const_float([1, 4, 5, 3], C)  # NHWC inside: the constant runs along channels


@pytest.mark.parametrize("in_order,out_order", [(NCHW, NCHW), (NHWC, NCHW), (NCHW, NHWC), (NHWC, NHWC)],
                         ids=["nchw_nchw", "channels_last_in", "channels_last_out", "channels_last_both"])
def test_channels_last_flags_transpose_or_pass_through(in_order, out_order):
    s = Storage()
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 5)).astype(np.float32)
    args = [s.tensor(x, in_order), s.empty((1, 3, 4, 5), dim_order=out_order)]
    execute(pack(Payload.reference(Header(1, (1,), (1,), (0,), (0,)), ADD_C)), args)
    np.testing.assert_array_equal(s.logical(args[1]), x + C.reshape(1, 3, 1, 1))


def test_unflagged_tensors_are_passed_as_they_are():
    s = Storage()
    x = np.random.default_rng(1).standard_normal((1, 4, 5, 3)).astype(np.float32)
    args = [s.tensor(x), s.empty((1, 4, 5, 3))]
    execute(pack(Payload.reference(Header(1, (0,), (0,), (0,), (0,)), ADD_C)), args)
    np.testing.assert_array_equal(s.logical(args[1]), x + C)


def test_argument_maps_pick_inputs_and_place_outputs():
    s = Storage()
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    # delegate args: [b, unused, a | out0, out1]; payload input 0 = arg 2 (a), input 1 = arg 0 (b);
    # payload output 0 (a + b) goes to delegate output 1, output 1 (relu(a - b)) to delegate output 0
    header = Header(3, (0, 0), (0, 0), (2, 0), (1, 0))
    args = [s.tensor(b), s.tensor(np.zeros(4, np.int32)), s.tensor(a), s.empty((2, 3)), s.empty((2, 3))]
    execute(pack(Payload.reference(header, two_in_two_out_float([2, 3]))), args)
    np.testing.assert_array_equal(s.logical(args[4]), a + b)
    np.testing.assert_array_equal(s.logical(args[3]), np.maximum(a - b, 0))


def test_int8_matches_litert():
    s = Storage()
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-128, 128, (1, 2, 3, 4), dtype=np.int8) for _ in range(2))
    tflite = add_relu_int8([1, 3, 4, 2])
    args = [s.tensor(a), s.tensor(b), s.empty((1, 2, 3, 4), np.int8)]
    execute(pack(Payload.reference(Header(2, (1, 1), (1,), (0, 1), (0,)), tflite)), args)
    nhwc = lambda t: np.ascontiguousarray(t.transpose(0, 2, 3, 1))  # noqa: E731
    expected = run_litert(tflite, [nhwc(a), nhwc(b)])[0].transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(s.logical(args[2]), expected)


def test_interpreter_is_cached_per_blob_and_released_per_handle():
    s = Storage()
    ex = Executor(capacity=2)
    blob = pack(Payload.reference(Header(1, (0,), (0,), (0,), (0,)), ADD_C))
    calls = []

    def get_blob():
        calls.append(1)
        return blob

    args = [s.tensor(np.zeros((1, 4, 5, 3), np.float32)), s.empty((1, 4, 5, 3))]
    for handle in (1, 1, 2):
        ex.execute(handle, get_blob, args)
    assert len(calls) == 2 and len(ex._by_digest) == 1  # handle 2 read the blob, found the same interpreter
    ex.release(1)
    assert 1 not in ex._by_handle and 2 in ex._by_handle


def _microcode_blob():
    mc = struct.pack("<8I", MICROCODE_MAGIC, 1, 1, 0, 0, 0, 32, 0)
    return pack(Payload(Header(1, (0,), (0,), (0,), (0,)), mc))


def _corrupt_tflite():
    tflite = b"\xff" * 8 + ADD_C[8:]  # root table offset and file identifier; the checksum covers the damage
    return pack(Payload.reference(Header(1, (0,), (0,), (0,), (0,)), tflite))


GOOD = pack(Payload.reference(Header(1, (1,), (1,), (0,), (0,)), ADD_C))
X = np.zeros((1, 3, 4, 5), np.float32)
BAD = {
    "microcode": (lambda s: (_microcode_blob(), [s.tensor(X), s.empty((1, 3, 4, 5))]),
                  DELEGATE_INCOMPATIBLE, MICROCODE_REFUSAL),
    "truncated": (lambda s: (GOOD[:20], [s.tensor(X), s.empty((1, 3, 4, 5))]), INVALID_PROGRAM,
                  "invalid delegate payload"),
    "corrupt_tflite": (lambda s: (_corrupt_tflite(), [s.tensor(X), s.empty((1, 3, 4, 5))]), INVALID_PROGRAM,
                       "LiteRT cannot load"),
    "io_count": (lambda s: (pack(Payload.reference(Header(2, (1, 1), (1,), (0, 1), (0,)), ADD_C)),
                            [s.tensor(X), s.tensor(X), s.empty((1, 3, 4, 5))]), INVALID_PROGRAM,
                 "declares 2 inputs and 1 outputs but its TFLite has 1 and 1"),
    "too_few_args": (lambda s: (GOOD, [s.tensor(X)]), INVALID_PROGRAM, "needs 2 delegate arguments"),
    "wrong_shape": (lambda s: (GOOD, [s.tensor(np.zeros((1, 3, 5, 4), np.float32)), s.empty((1, 3, 4, 5))]),
                    INVALID_ARGUMENT, r"payload input 0 .* float32\[1, 5, 4, 3\] .* expects float32\[1, 4, 5, 3\]"),
    "wrong_dtype": (lambda s: (GOOD, [s.tensor(X.astype(np.int32)), s.empty((1, 3, 4, 5))]), INVALID_ARGUMENT,
                    "int32"),
    "wrong_output_shape": (lambda s: (GOOD, [s.tensor(X), s.empty((1, 3, 4, 6))]), INVALID_ARGUMENT,
                           r"payload output 0 \(delegate argument 1\)"),
    "wrong_output_dtype": (lambda s: (GOOD, [s.tensor(X), s.empty((1, 3, 4, 5), np.int8)]), INVALID_ARGUMENT,
                           "int8"),
    "byte_size": (lambda s: (GOOD, [Arg(True, s.tensor(X).data, 8, 6, (1, 3, 4, 5), NCHW),
                                    s.empty((1, 3, 4, 5))]), INVALID_ARGUMENT, "holds 8 bytes"),
    "null_data": (lambda s: (GOOD, [Arg(True, 0, X.nbytes, 6, (1, 3, 4, 5), NCHW), s.empty((1, 3, 4, 5))]),
                  INVALID_ARGUMENT, "null data pointer"),
    "not_a_tensor": (lambda s: (GOOD, [Arg(False), s.empty((1, 3, 4, 5))]), INVALID_PROGRAM, "not a tensor"),
    "bad_dim_order": (lambda s: (GOOD, [Arg(True, s.tensor(X).data, X.nbytes, 6, (1, 3, 4, 5), (0, 0, 1, 2)),
                                        s.empty((1, 3, 4, 5))]), INVALID_ARGUMENT, "invalid dim order"),
    "unknown_dtype": (lambda s: (GOOD, [Arg(True, s.tensor(X).data, X.nbytes, 99, (1, 3, 4, 5), NCHW),
                                        s.empty((1, 3, 4, 5))]), NOT_SUPPORTED, "dtype code 99"),
    "unflagged_channels_last": (
        lambda s: (pack(Payload.reference(Header(1, (0,), (0,), (0,), (0,)), ADD_C)),
                   [s.tensor(np.zeros((1, 4, 5, 3), np.float32), NHWC), s.empty((1, 4, 5, 3))]),
        INVALID_ARGUMENT, "without a format flag must be contiguous"),
}


@pytest.mark.parametrize("case", BAD.values(), ids=BAD.keys())
def test_bad_calls_raise_with_a_code_and_leave_outputs_untouched(case):
    make, code, text = case
    s = Storage()
    blob, args = make(s)
    before = [p.copy() for p in s.keep]
    with pytest.raises(ExecutionError, match=text) as info:
        execute(blob, args)
    assert info.value.code == code
    assert all(np.array_equal(b, p) for b, p in zip(before, s.keep))


def test_microcode_refusal_text_is_exact():
    assert MICROCODE_REFUSAL == ("this .pte holds Neutron microcode for the device; lower without the eIQ Neutron "
                                 "SDK, or with `reference=True`, to run it on the host")


def test_a_bad_second_output_prevents_every_write():
    s = Storage()
    a, b = np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)
    args = [s.tensor(a), s.tensor(b), s.empty((2, 3)), s.empty((3, 2))]
    with pytest.raises(ExecutionError, match="payload output 1"):
        execute(pack(Payload.reference(Header(2, (0, 0), (0, 0), (0, 1), (0, 1)), two_in_two_out_float([2, 3]))),
                args)
    assert (s.logical(args[2]) == -7).all()

"""The host's form of a long int8 SOFTMAX (runtime/long_softmax.py), against LiteRT and numpy.

LiteRT's int8 reference softmax aborts once a row's sum of fixed-point exponentials reaches 512, so the host runs a
softmax of 512 or more elements as DEQUANTIZE -> float SOFTMAX -> QUANTIZE. Checked here on the TFLite itself: a
short softmax is left as it is (the same bytes); a long one gives the exactly rounded softmax of its int8 input,
computed independently in numpy (float64), within 1 step (float32 against float64 at a rounding boundary), and the
rewritten model keeps the original's inputs and outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from executorch_neutron.runtime.long_softmax import LONG_ROW, host_form
from executorch_neutron.tflite.builder import ModelBuilder, Quant, options
from executorch_neutron.tflite.reader import op_name, read_model

IN_SCALE, OUT = 0.05, (1 / 256, -128)


def _softmax_tflite(n: int) -> bytes:
    b = ModelBuilder()
    x = b.tensor("x", (1, n), np.int8, Quant.per_tensor(IN_SCALE, 0))
    y = b.tensor("y", (1, n), np.int8, Quant.per_tensor(*OUT))
    b.op(schema.BuiltinOperator.SOFTMAX, [x], [y], options("SoftmaxOptionsT", beta=1.0))
    b.inputs, b.outputs = [x], [y]
    return b.build()


def _run(tflite: bytes, x: np.ndarray) -> np.ndarray:
    interpreter = Interpreter(model_content=tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_a_short_softmax_is_left_as_it_is():
    tflite = _softmax_tflite(LONG_ROW - 1)
    assert host_form(tflite) == tflite


@pytest.mark.parametrize("n, spread", [(LONG_ROW, 3), (1000, 3), (1000, 127)])
def test_a_long_softmax_is_the_exactly_rounded_softmax(n, spread):
    rng = np.random.default_rng(n + spread)
    x = rng.integers(-spread, spread + 1, (1, n)).astype(np.int8)
    form = host_form(_softmax_tflite(n))
    model = read_model(form)
    assert [op_name(model, op) for op in model.subgraphs[0].operators] == ["DEQUANTIZE", "SOFTMAX", "QUANTIZE"]
    logits = x.astype(np.float64) * IN_SCALE
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    expected = np.clip(np.round(probs / OUT[0]) + OUT[1], -128, 127)
    got = _run(form, x)
    assert got.dtype == np.int8 and got.shape == (1, n)
    assert np.abs(got.astype(int) - expected).max() <= 1


def _exit_status_of(tflite: bytes, x: np.ndarray) -> int:
    """Run LiteRT in a forked child: its exit status (negative: the signal that ended it)."""
    import os

    pid = os.fork()
    if pid == 0:
        import faulthandler

        faulthandler.disable()  # the signal is the answer; no traceback dump
        try:
            _run(tflite, x)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def test_litert_aborts_on_the_original_form_of_a_close_long_row():
    """Why the host form exists: 1000 equal logits sum to 1000 >= 512 and LiteRT's int8 kernel aborts; 511 do
    not."""
    import signal

    assert _exit_status_of(_softmax_tflite(1000), np.zeros((1, 1000), np.int8)) == -signal.SIGABRT
    assert _exit_status_of(_softmax_tflite(LONG_ROW - 1), np.zeros((1, LONG_ROW - 1), np.int8)) == 0

"""The host runtime through the stock ExecuTorch runtime, on .pte files made by the stand-in backend.

These cases exercise what the real pipeline may not produce on its own: reversed argument maps, a channels-last
program input, int8 program inputs, 2-D tensors, NCHW partitions (no format flags).
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import torch
from pte_tools import delegate_blobs, replace_blobs
from tflite_fixtures import run_litert

from executorch_neutron.core.payload import MICROCODE_MAGIC, Header, Payload, pack, unpack
from executorch_neutron.neutron.plugin import DEVICE_ONLY as MICROCODE_REFUSAL
from executorch_neutron.runtime import NeutronRuntimeError, bridge, load, run

SINGLE_PARTITION = ["add_bias", "add_bias_nchw", "two_in_two_out", "int8_add", "flat_2d", "channels_last_input"]


def _case(ptes, name):
    data = torch.load(ptes / f"{name}.pt")
    return ptes / f"{name}.pte", data["inputs"], data["expected"]


def _litert_reference(ptes, name, inputs):
    """Run the partition's TFLite directly in LiteRT, applying the header by hand (single-partition models)."""
    tflite = (ptes / f"{name}.partition0.tflite").read_bytes()
    h = json.loads((ptes / f"{name}.partition0.json").read_text())
    to_nhwc = lambda t, f: np.ascontiguousarray(t.transpose(0, 2, 3, 1)) if f and t.ndim == 4 else t  # noqa: E731
    xs = [to_nhwc(inputs[h["input_args"][i]].contiguous().numpy(), f) for i, f in enumerate(h["input_formats"])]
    outs = run_litert(tflite, xs)
    result = [None] * len(outs)
    for j, (o, f) in enumerate(zip(outs, h["output_formats"])):
        result[h["output_args"][j]] = o.transpose(0, 3, 1, 2) if f and o.ndim == 4 else o
    return result


@pytest.mark.parametrize("name", SINGLE_PARTITION)
def test_outputs_equal_litert_on_the_partition_tflite(stand_in_ptes, name):
    pte, inputs, _ = _case(stand_in_ptes, name)
    outputs = run(pte, inputs)
    for out, ref in zip(outputs, _litert_reference(stand_in_ptes, name, inputs), strict=True):
        np.testing.assert_array_equal(out.numpy(), ref)


@pytest.mark.parametrize("name", ["add_bias", "add_bias_nchw", "two_in_two_out", "cpu_between", "flat_2d",
                                  "channels_last_input"])
def test_float_outputs_equal_pytorch(stand_in_ptes, name):
    pte, inputs, expected = _case(stand_in_ptes, name)
    outputs = run(pte.read_bytes(), inputs)  # bytes as well as paths
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected):
        torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-5)


def test_cpu_op_between_two_delegates(stand_in_ptes):
    pte, inputs, expected = _case(stand_in_ptes, "cpu_between")
    assert len(delegate_blobs(pte.read_bytes())) == 2
    torch.testing.assert_close(run(pte, inputs)[0], expected[0])


def test_channels_last_program_input_passes_straight_through(stand_in_ptes, monkeypatch):
    from executorch_neutron.runtime import executor

    seen = []
    original = executor.run_program
    monkeypatch.setattr(executor, "run_program", lambda p, args: (seen.append(args[0].dim_order), original(p, args)))
    pte, inputs, expected = _case(stand_in_ptes, "channels_last_input")
    torch.testing.assert_close(run(pte, inputs, isolated=False)[0], expected[0])  # in this process: `seen` is here
    assert seen == [(0, 2, 3, 1)]


def test_program_runs_repeatedly(stand_in_ptes):
    pte, inputs, expected = _case(stand_in_ptes, "two_in_two_out")
    program = load(pte)
    for k in range(3):
        scaled = [x * (k + 1) for x in inputs]
        out = program.execute(scaled)
        torch.testing.assert_close(out[0], torch.relu(scaled[0] + scaled[1]))


WRONG_INPUTS = {
    "count": (lambda xs: xs[:1], "takes 2 inputs, got 1"),
    "shape": (lambda xs: [xs[0][..., :4], xs[1]], r"input 0 is torch.float32\[1, 4, 6, 4\] but .*\[1, 4, 6, 5\]"),
    "dtype": (lambda xs: [xs[0], xs[1].double()], "input 1 is torch.float64"),
}


@pytest.mark.parametrize("case", WRONG_INPUTS.values(), ids=WRONG_INPUTS.keys())
def test_wrong_inputs_are_clear_errors(stand_in_ptes, case):
    change, text = case
    pte, inputs, _ = _case(stand_in_ptes, "two_in_two_out")
    with pytest.raises(NeutronRuntimeError, match=text):
        run(pte, change(list(inputs)))


def _microcode(blob: bytes) -> bytes:
    header = unpack(blob).header
    return pack(Payload(header, struct.pack("<8I", MICROCODE_MAGIC, 0, 0, 0, 0, 0, 48, 4) + bytes(16), b"wxyz"))


def test_microcode_payload_is_refused_with_the_exact_message(stand_in_ptes):
    pte, inputs, _ = _case(stand_in_ptes, "add_bias")
    with pytest.raises(NeutronRuntimeError) as info:
        run(replace_blobs(pte.read_bytes(), lambda i, b: _microcode(b)), inputs)
    assert str(info.value) == MICROCODE_REFUSAL


def test_header_that_disagrees_with_the_call_is_an_error(stand_in_ptes):
    pte, inputs, _ = _case(stand_in_ptes, "add_bias")

    def widen(_, blob):
        return pack(Payload.reference(Header(3, (1,), (1,), (2,), (0,)), unpack(blob).tflite))  # valid checksum

    with pytest.raises(NeutronRuntimeError, match="needs 4 delegate arguments"):
        run(replace_blobs(pte.read_bytes(), widen), inputs)


def test_empty_blob_fails_at_load_with_the_backend_message(stand_in_ptes):
    pte, inputs, _ = _case(stand_in_ptes, "add_bias")
    with pytest.raises(NeutronRuntimeError, match="delegate blob is empty"):
        run(replace_blobs(pte.read_bytes(), lambda i, b: b""), inputs)


def test_not_a_pte(tmp_path):
    with pytest.raises(NeutronRuntimeError, match="no .pte file"):
        run(tmp_path / "missing.pte", [])
    with pytest.raises(NeutronRuntimeError, match="not an ExecuTorch program: its file identifier is b'nite'"):
        run(b"definitely not a program", [])


def test_backend_is_registered_once_per_process():
    lib = bridge.ensure_registered()
    assert bridge.ensure_registered() is lib
    assert lib.neutron_host_register(b"NeutronBackend") == 0  # the one registration's status, not a second attempt
    from executorch.runtime import Runtime

    names = Runtime.get().backend_registry.registered_backend_names
    assert names.count("NeutronBackend") == 1 and Runtime.get().backend_registry.is_available("NeutronBackend")

"""inspect_pte: what a .pte holds (methods, CPU kernels, delegates, payload kinds), and clean errors."""

import pytest

from executorch_neutron import lower
from executorch_neutron.models import zoo
from executorch_neutron.pte import PteError, inspect_pte


def test_inspect_lowered_cifarnet():
    model, inputs = zoo.cifarnet()
    result = lower(model, inputs, [inputs])
    s = inspect_pte(result.pte)
    (method,) = s.methods
    assert method.name == "forward" and method.inputs[0].shape == [1, 3, 32, 32]
    assert method.outputs[0].shape == [1, 10]
    (d,) = s.delegates
    assert d.backend_id == "NeutronBackend" and d.kind == "host-reference"
    assert d.compile_specs["target"] == "imxrt700"
    assert d.bytes == len(result.report.partitions[0].blob)
    assert d.tflite_ops["CONV_2D"] == 3 and d.tflite_ops["FULLY_CONNECTED"] == 1
    assert "NeutronBackend" in str(s) and s.to_dict()["methods"][0]["delegate_calls"] == 1


def test_inspect_rejects_garbage(tmp_path):
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"not a program" * 8)
    with pytest.raises(PteError, match="is not an ExecuTorch program: its file identifier is"):
        inspect_pte(bad)
    with pytest.raises(PteError, match="no .pte file"):
        inspect_pte(tmp_path / "missing.pte")

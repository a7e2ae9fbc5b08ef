"""The SDK path through the whole pipeline: lower() with the fake eIQ SDK -> microcode .pte -> host refuses it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_neutron_sdk as fake  # noqa: E402

from executorch_neutron import lower  # noqa: E402
from executorch_neutron.core.payload import unpack  # noqa: E402
from executorch_neutron.neutron.plugin import DEVICE_ONLY as MICROCODE_REFUSAL  # noqa: E402
from executorch_neutron.runtime import NeutronRuntimeError, run  # noqa: E402


class ConvRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def test_lowering_with_the_sdk_gives_microcode_that_the_host_refuses(tmp_path, monkeypatch):
    fake.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    torch.manual_seed(0)
    model, x = ConvRelu().eval(), (torch.randn(1, 3, 8, 6),)
    device = lower(model, x, [x])
    reference = lower(model, x, [x], reference=True)
    (blob,), (ref_blob,) = device.payloads.values(), reference.payloads.values()
    payload, ref_payload = unpack(blob), unpack(ref_blob)
    assert payload.is_microcode and payload.weights == fake.WEIGHTS and payload.kernels[:21] == fake.KERNELS
    assert payload.header == ref_payload.header  # same io maps; version 0 (scratch output only)
    assert payload.microcode == fake.fake_microcode(ref_payload.tflite, 1, 1, fake.WEIGHTS)  # the same TFLite went in
    with pytest.raises(NeutronRuntimeError) as info:
        run(device.pte, x)
    assert str(info.value) == MICROCODE_REFUSAL
    torch.testing.assert_close(run(reference.pte, x)[0].shape, torch.Size([1, 8, 8, 6]))


def test_the_pte_records_the_sdk_that_compiled_it_and_keeps_kernel_selection_beside_it(tmp_path, monkeypatch,
                                                                                          capsys):
    """compile with the current SDK shape: `report` names the SDK version and entry point from the .pte itself,
    the kernel-selection code lands beside the .pte (not in the working directory) and compile says where."""
    from executorch_neutron.cli import main
    from executorch_neutron.pte import inspect_pte

    fake.install(tmp_path / "site", api="compiler", version="3.3.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    work, out = tmp_path / "cwd", tmp_path / "out"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "net.py").write_text(
        "import torch\nfrom torch import nn\n\ndef factory():\n    torch.manual_seed(0)\n"
        "    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()).eval(), (torch.randn(1, 3, 8, 6),)\n")
    code = main(["compile", "net.py:factory", "--random-calibration", "--dump-kernel-selection-code",
                 "-o", str(out / "net.pte")])
    text = capsys.readouterr().out
    assert code == 0
    assert "compiled by eIQ Neutron SDK 3.3.0 (neutron_compiler.compileModel)" in text  # the delegation report
    assert f"wrote _kernel_selection_neutron_0.c (the NPU compiler's files) in {out}" in text
    assert (out / "_kernel_selection_neutron_0.c").read_text() == "/* fake kernel selection */\n"
    assert not [p for p in work.iterdir() if p.name != "net.py" and not p.name.startswith("__")]
    (delegate,) = inspect_pte(out / "net.pte").delegates
    assert delegate.kind == "neutron-microcode"
    assert delegate.compiled_by == "eIQ Neutron SDK 3.3.0 (neutron_compiler.compileModel)"
    assert main(["report", str(out / "net.pte")]) == 0
    assert "device compiler: eIQ Neutron SDK 3.3.0 (neutron_compiler.compileModel)" in capsys.readouterr().out

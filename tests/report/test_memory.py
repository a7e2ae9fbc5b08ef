"""The memory section (report/memory.py) against references read apart from it: ExecuTorch's own memory plan,
the NeutronGraph node's scratch output, Vela's payload block parsed here by the layout docs/guide/sources.md documents, Vela's
own estimate at lowering time; and the budget check (nothing written on refusal, exit code 2)."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import torch
from ai_edge_litert import schema_py_generated as schema
from torch import nn

from executorch_neutron import lower
from executorch_neutron.backends import BACKENDS
from executorch_neutron.cli import main
from executorch_neutron.compile_spec import NeutronCompileSpec
from executorch_neutron.core.payload import Header, Payload, pack
from executorch_neutron.neutron.npu.compile import node_header
from executorch_neutron.neutron.npu.extract import extract
from executorch_neutron.report import load_schema
from executorch_neutron.report.memory import BudgetError, check_budget, human, memory_section, parse_size
from executorch_neutron.target import NEUTRON

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "npu"))
sys.path.insert(0, str(TESTS / "runtime"))
import fake_neutron_sdk as fake  # noqa: E402
from tflite_fixtures import add_relu_int8, two_in_two_out_float  # noqa: E402

TINY = '''
import torch
from torch import nn

def factory():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 5, 8))
    return model.eval(), (torch.randn(1, 3, 4, 5),)
'''

SIZES = {
    "65536": 65536, "64KiB": 65536, "64K": 65536, "64k": 65536, "64KB": 64000, "64 kib": 65536,
    "2MB": 2_000_000, "2MiB": 2 * 1024 ** 2, "2M": 2 * 1024 ** 2, "1.5KiB": 1536, "512B": 512, "0": 0,
    "7.32 MiB": round(7.32 * 1024 ** 2), "1.2 KiB": 1229,  # the report's own figures: to the nearest byte
}


@pytest.mark.fast
@pytest.mark.parametrize("text", SIZES, ids=SIZES)
def test_size_parser(text):
    assert parse_size(text) == SIZES[text]


@pytest.mark.fast
@pytest.mark.parametrize("text", ["", "KiB", "64QB", "-1", "1.3B", "64 KiB extra", "0x40"])
def test_size_parser_refuses(text):
    with pytest.raises(BudgetError, match="not a"):
        parse_size(text)


def _int8_bytes(model: schema.ModelT, index: int) -> int:
    return int(np.prod(model.subgraphs[0].tensors[index].shape))


@pytest.mark.fast
@pytest.mark.parametrize("mode", ["ok", "profile"])
def test_neutron_scratch_is_the_neutron_graph_scratch_output(mode):
    """Device microcode: the scratch (and profile, debug) lines equal the NeutronGraph node's extra outputs."""
    tflite = two_in_two_out_float([2, 3])
    converted = fake.neutron_graph_model(tflite, mode)
    model = schema.ModelT.InitFromPackedBuf(converted, 0)
    extra = list(model.subgraphs[0].operators[0].outputs)[2:]  # after the two real outputs: scratch [profile debug]
    parts = extract(converted, n_inputs=2, n_outputs=2)
    header = Header(n_args=2, input_formats=(0, 0), output_formats=(0, 0), input_args=(0, 1), output_args=(0, 1))
    blob = pack(Payload(node_header(header, parts), parts.microcode, parts.weights, parts.kernels))
    blocks = BACKENDS[NEUTRON].memory(blob, NeutronCompileSpec(target="imxrt700"), None, "p")
    by_what = {b.what: b for b in blocks}
    assert by_what["NPU scratch (p)"].bytes == _int8_bytes(model, extra[0]) and not by_what["NPU scratch (p)"].estimated
    if mode == "profile":
        assert by_what["NPU profile buffer (p)"].bytes == _int8_bytes(model, extra[1])
        assert by_what["NPU debug buffer (p)"].bytes == _int8_bytes(model, extra[2])
    # imxrt700: the NPU cannot read flash, so the payload is also needed in SRAM (no prefetch buffer here)
    assert by_what["NPU payload in SRAM (p)"].bytes == len(blob) and by_what["NPU payload in SRAM (p)"].where == "SRAM"
    flash_npu = BACKENDS[NEUTRON].memory(blob, NeutronCompileSpec(target="mcxn94x"), None, "p")
    assert "NPU payload in SRAM (p)" not in {b.what for b in flash_npu}  # mcxn94x reads weights from flash
    on_imx95 = BACKENDS[NEUTRON].memory(blob, NeutronCompileSpec(target="imx95"), None, "p")
    assert {b.where for b in on_imx95} == {"DRAM"}  # the temp allocator of an applications processor: DRAM


@pytest.mark.fast
def test_host_reference_scratch_estimate_hand_counted():
    """ADD -> RELU on [1, 4, 5, 6] int8: the ADD output is the only intermediate tensor."""
    tflite = add_relu_int8([1, 4, 5, 6])
    header = Header(n_args=2, input_formats=(0, 0), output_formats=(0,), input_args=(0, 1), output_args=(0,))
    blob = pack(Payload.reference(header, tflite))
    (scratch, weights) = BACKENDS[NEUTRON].memory(blob, NeutronCompileSpec(target="imxrt700"), None, "p")
    assert scratch.bytes == 4 * 5 * 6 and scratch.estimated and "intermediate tensors" in scratch.source
    assert weights.estimated and weights.where == "SRAM"


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 6 * 5, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


@pytest.fixture(scope="module")
def lowered():
    torch.manual_seed(0)
    model, x = ConvNet().eval(), (torch.randn(1, 3, 6, 5),)
    return {t: lower(model, x, [x], target=t) for t in ("imxrt700", "imx93")}


def test_planned_memory_is_executorchs(lowered):
    result = lowered["imxrt700"]
    # ExecuTorch's own memory plan of the same edge program, not read back from the .pte
    plan = result.edge_program.to_executorch().executorch_program.execution_plan[0]
    planned = next(b for b in result.report.memory.program if b.what == "planned memory")
    assert planned.bytes == sum(plan.non_const_buffer_sizes[1:]) > 0
    assert "non_const_buffer_sizes" in planned.source


def _vela_blocks(blob: bytes) -> dict[str, bytes]:
    """docs/guide/sources.md's layout: 16-byte NUL-padded name, uint32 LE size, uint8 flag, 11 zero bytes, data padded to 16."""
    out, pos = {}, 0
    while pos < len(blob):
        name, size = blob[pos:pos + 16].rstrip(b"\0").decode(), struct.unpack_from("<I", blob, pos + 16)[0]
        out[name] = blob[pos + 32:pos + 32 + size]
        pos += 32 + size + (-size % 16)
    return out


def test_ethos_u_figures_are_velas(lowered):
    result = lowered["imx93"]
    (blob,) = result.payloads.values()
    mem = result.report.memory
    (arena, sram) = mem.delegates[0]
    assert arena.bytes == struct.unpack("<I", _vela_blocks(blob)["scratch_size"])[0]
    assert arena.where == "DRAM"  # Dedicated_Sram: Vela's arena on AXI1, the DRAM port of Ethos_U65_High_End
    assert sram.bytes == result.report.estimate["sram_bytes"]  # Vela's own figure from the lowering's run
    assert mem.required("SRAM") == sram.bytes and mem.sram_bytes == 384 * 1024
    text = str(result.report)
    assert "memory (estimate)" not in text and text.count("SRAM usage") == 1


def test_device_only_ethos_u_pte_says_vela_sram_is_not_in_it(lowered):
    torch.manual_seed(0)
    model, x = ConvNet().eval(), (torch.randn(1, 3, 6, 5),)
    mem = lower(model, x, [x], target="imx93", embed_reference=False).report.memory
    (arena,) = mem.delegates[0]  # no reference TFLite: no Vela SRAM line, and the arena line says why
    assert arena.bytes == lowered["imx93"].report.memory.delegates[0][0].bytes and "--device-only" in arena.source


def test_json_validates_and_html_has_the_section(lowered, tmp_path):
    for target, result in lowered.items():
        data = json.loads(result.report.to_json())
        jsonschema.validate(data, load_schema())
        assert data["memory"]["target"] == target and data["memory"]["pte_bytes"] == len(result.pte)
        html = result.report.save(tmp_path / f"{target}.html").read_text()
        assert "<h2>Memory (from the .pte)</h2>" in html and "non_const_buffer_sizes" in html
        md = result.report.save(tmp_path / f"{target}.md").read_text()
        assert "## Memory (from the .pte)" in md


def test_section_from_the_pte_file_equals_the_lowering_one(lowered, tmp_path):
    for result in lowered.values():
        path = result.save(tmp_path / "m.pte")
        assert memory_section(path).to_dict() == result.report.memory.to_dict()


def test_check_budget_names_required_available_excess(lowered):
    result = lowered["imxrt700"]
    need = result.report.memory.required("SRAM")
    held = check_budget(result, sram=need)
    assert held.budgets == {"SRAM": need} and held.required("SRAM") == need and result.report.memory.budgets == {}
    assert any(line.startswith("  total SRAM:") and f"of the {human(need)} budget (100.0%, fits)" in line
               for line in held.lines())
    with pytest.raises(BudgetError) as info:
        check_budget(result, sram=need - 1, flash="1MB")
    assert f"({need:,} B)" in str(info.value) and f"({need - 1:,} B)" in str(info.value)
    assert "1 B over" in str(info.value) and "flash" not in str(info.value)
    parts = result.report.memory.contributors("SRAM")
    assert parts and all(f"{b.what} {human(b.bytes)}" in str(info.value) for b in parts)  # every part, not 3
    assert info.value.section.budgets == {"SRAM": need - 1, "flash": 1000 ** 2}


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


def test_a_pte_without_target_is_not_checked_blindly():
    torch.manual_seed(0)
    model, x = Add().eval(), (torch.randn(1, 8), torch.randn(1, 8))
    result = lower(model, x, [x], operators_not_to_delegate=("aten.add.Tensor",))  # CPU only: no delegate
    assert result.report.memory.required("SRAM") > 0  # the lowering knows the target
    section = memory_section(result.pte)
    assert section.target is None and section.totals() == []
    with pytest.raises(BudgetError, match="records no target"):
        check_budget(result.pte, sram="1MiB")


def test_lower_refuses_over_budget():
    torch.manual_seed(0)
    model, x = ConvNet().eval(), (torch.randn(1, 3, 6, 5),)
    with pytest.raises(BudgetError, match="SRAM: needs"):
        lower(model, x, [x], sram_budget="1KiB")


@pytest.fixture
def factory(tmp_path):
    path = tmp_path / "tiny.py"
    path.write_text(TINY)
    return f"{path}:factory"


def test_compile_over_budget_writes_nothing(factory, tmp_path, capsys):
    out, report, inter = tmp_path / "m.pte", tmp_path / "m.json", tmp_path / "inter"
    code = main(["--quiet", "compile", factory, "--random-calibration", "-o", str(out), "--report", str(report),
                 "--intermediates", str(inter), "--sram-budget", "1KiB"])
    printed = capsys.readouterr()
    err = [line for line in printed.err.splitlines() if line.startswith(("error:", "hint:"))]
    assert code == 2 and not out.exists() and report.exists()  # the refused program's report, not its .pte
    memory = json.loads(report.read_text())["memory"]
    assert memory["budgets"] == {"sram": 1024}
    assert [t["fits"] for t in memory["totals"] if t["where"] == "SRAM"] == [False]
    assert "memory (from the .pte" in printed.out and "of the 1.0 KiB budget" in printed.out
    assert "no .pte was written" in printed.out
    assert not [p for p in inter.iterdir()]  # the partition TFLite the lowering wrote is removed
    assert err[0].startswith("error: the program does not fit its memory budget: SRAM: needs") and "over" in err[0]
    assert len(err) == 2 and err[1].startswith("hint:")
    # within budget: written, and `report` shows the same section
    assert main(["--quiet", "compile", factory, "--random-calibration", "-o", str(out), "--sram-budget",
                 "7MiB", "--flash-budget", "2MB"]) == 0
    compiled = capsys.readouterr().out
    assert main(["report", str(out)]) == 0
    shown = capsys.readouterr().out
    section = memory_section(out).lines()
    assert all(line in shown for line in section)
    assert all(line in compiled for line in section if not line.startswith(("  total", "  note")))
    assert "of the 7.00 MiB budget" in compiled and "pass --flash-budget" not in compiled


def test_a_flash_budget_on_a_dram_target_says_it_was_not_checked(lowered, caplog):
    """imx93 keeps the program in DRAM: a flash budget holds against nothing, and says so instead of passing silently."""
    with caplog.at_level("WARNING"):
        held = check_budget(lowered["imx93"], flash="1KiB")
    note = "--flash-budget 1.0 KiB was not checked: on imx93 the program uses no flash (it is stored in DRAM)"
    assert note in held.notes and note in caplog.text


def test_report_holds_a_pte_against_budgets(factory, tmp_path, capsys):
    out = tmp_path / "m.pte"
    assert main(["--quiet", "compile", factory, "--random-calibration", "-o", str(out)]) == 0
    need = memory_section(out).required("SRAM")
    capsys.readouterr()
    assert main(["report", str(out), "--sram-budget", str(need), "--flash-budget", "1MiB"]) == 0
    shown = capsys.readouterr().out
    assert f"of the {human(need)} budget (100.0%, fits)" in shown and "pass --flash-budget" not in shown
    assert main(["report", str(out), "--sram-budget", str(need - 1)]) == 2
    printed = capsys.readouterr()
    assert "does NOT fit" in printed.out and "1 B over" in printed.err


@pytest.mark.fast
def test_bad_size_is_bad_input_before_any_work(tmp_path, capsys):
    out = tmp_path / "m.pte"
    code = main(["compile", str(tmp_path / "absent.py:factory"), "-o", str(out), "--flash-budget", "2XB"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and not out.exists()
    assert err[0].startswith("error: size '2XB' is not a size") and err[1].startswith("hint:")


def test_device_microcode_scratch_end_to_end(tmp_path, monkeypatch):
    """Lowered with the SDK double: the section's scratch is the NeutronGraph scratch output the converter made."""
    fake.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    torch.manual_seed(0)
    model, x = ConvNet().eval(), (torch.randn(1, 3, 6, 5),)
    result = lower(model, x, [x], target="imxrt700", intermediates_dir=tmp_path / "inter")
    tflite = (tmp_path / "inter" / f"{next(iter(result.payloads))}.tflite").read_bytes()
    converted = schema.ModelT.InitFromPackedBuf(fake.neutron_graph_model(tflite), 0)
    n_out = len(converted.subgraphs[0].outputs)
    scratch_index = list(converted.subgraphs[0].operators[0].outputs)[n_out]
    (scratch, payload) = result.report.memory.delegates[0]
    assert scratch.what.startswith("NPU scratch") and scratch.bytes == _int8_bytes(converted, scratch_index)
    assert payload.bytes == len(next(iter(result.payloads.values()))) and not result.report.memory.estimated

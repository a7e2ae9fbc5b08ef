"""No option of NeutronCompileSpec is accepted and silently ignored: each has a visible effect or a clear refusal.

One check per field (the table must cover every field). Options only the eIQ Neutron converter reads are checked
twice: the SDK test double records what reached the converter, and a host-reference payload names them in a
warning because it cannot honour them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from executorch_neutron import NeutronCompileSpec, lower
from executorch_neutron.neutron.npu import NeutronCompileError, compile_partition
from executorch_neutron.neutron.npu import compile as npu_compile
from executorch_neutron.core.payload import Header, unpack

sys.path.insert(0, str(Path(__file__).resolve().parent / "npu"))
sys.path.insert(0, str(Path(__file__).resolve().parent / "runtime"))
import fake_neutron_sdk as fake  # noqa: E402
from tflite_fixtures import add_relu_int8  # noqa: E402

HEADER = Header(2, (0, 0), (0,), (0, 1), (0,))
CONV_INPUTS = (torch.randn(1, 3, 6, 10),)


def conv_relu():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()).eval()


@pytest.fixture
def env(tmp_path, monkeypatch, caplog):
    """Helpers: `sdk()` puts the SDK double on the path and returns what the converter saw; `reference(spec)`
    compiles a host-reference payload and returns the warnings."""
    monkeypatch.setattr(npu_compile, "_unused_warned", set())

    class Env:
        path = tmp_path

        @staticmethod
        def sdk(**options) -> dict:
            fake.install(tmp_path / "site")
            monkeypatch.syspath_prepend(str(tmp_path / "site"))
            record = tmp_path / "record.json"
            monkeypatch.setenv("FAKE_NEUTRON_RECORD", str(record))
            monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
            monkeypatch.chdir(tmp_path)
            out = compile_partition(add_relu_int8([1, 4]), HEADER, NeutronCompileSpec(**options), "neutron_0",
                                    [(1,), (2,)])
            seen = json.loads(record.read_text())
            seen["compiled"] = out
            return seen

        @staticmethod
        def reference(**options) -> list[str]:
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="executorch_neutron"):
                out = compile_partition(add_relu_int8([1, 4]), HEADER, NeutronCompileSpec(reference=True, **options),
                                        "neutron_0")
            assert out.kind == "host-reference"
            return [r.getMessage() for r in caplog.records]

    return Env()


def _converter_only(option, value, converter_name, converter_value):
    def check(env):
        warnings = env.reference(**{option: value})
        assert any(option in w and "no effect" in w for w in warnings), warnings
        assert env.sdk(**{option: value})["options"][converter_name] == converter_value
    return check


def check_target(env):
    assert env.sdk()["target"] == {"fake_target": "imxrt700"}
    with pytest.raises(NeutronCompileError, match="does not know target 'mcxn94x'"):
        env.sdk(target="mcxn94x")
    with pytest.raises(ValueError, match="imxrt700"):
        NeutronCompileSpec(target="no_such_npu")


def check_operators_not_to_delegate(env):
    r = lower(conv_relu(), CONV_INPUTS, [CONV_INPUTS], operators_not_to_delegate=("aten.convolution.default",))
    assert [j.reason for j in r.report.rejections if j.op == "aten.convolution.default"] == [
        "excluded by operators_not_to_delegate"]


def check_format_conversion(env):
    flags = {}
    for value in (True, False):
        r = lower(conv_relu(), CONV_INPUTS, [CONV_INPUTS], use_neutron_for_format_conversion=value)
        flags[value] = unpack(r.report.partitions[0].blob).header.input_formats
    assert flags == {True: (0,), False: (1,)}


def check_dump_kernel_selection_code(env):
    assert any("dump_kernel_selection_code" in w for w in env.reference(dump_kernel_selection_code=True))
    seen = env.sdk(dump_kernel_selection_code=True)
    assert seen["options"]["dumpKernelSelectionCode"] is True
    # no intermediates_dir: nothing lands in the working directory; the file comes back for LoweringResult.save
    assert not list(env.path.glob("*kernel_selection*"))
    assert seen["compiled"].files == {"_kernel_selection_neutron_0.c": b"/* fake kernel selection */\n"}


def check_intermediates_dir(env):
    out = env.path / "inter"
    lower(conv_relu(), CONV_INPUTS, [CONV_INPUTS], intermediates_dir=str(out))
    assert (out / "neutron_0.tflite").read_bytes()[4:8] == b"TFL3"


def check_use_profiling(env):
    warnings = env.reference(use_profiling=True)
    assert any("use_profiling" in w and "no NPU kernels to profile" in w for w in warnings), warnings
    seen = env.sdk(use_profiling=True)
    assert seen["options"]["useProfiling"] is True
    assert seen["compiled"].debug_handle_map == {0: (), 1: (1,), 2: (2,), 3: ()}  # parsed from the console


def check_reference(env):
    assert env.sdk()["compiled"].kind == "neutron-microcode"
    out = compile_partition(add_relu_int8([1, 4]), HEADER, NeutronCompileSpec(reference=True), "neutron_0")
    assert out.kind == "host-reference"


def check_embed_reference(env):
    inputs = (torch.randn(1, 3, 6, 10),)
    with_ref = lower(conv_relu(), inputs, [inputs], target="imx93").pte
    device_only = lower(conv_relu(), inputs, [inputs], target="imx93", embed_reference=False).pte
    assert b"ethos_u_reference/" in with_ref and b"ethos_u_reference/" not in device_only


def check_custom_delegation_options(env):
    model = lambda: nn.Flatten().eval()  # noqa: E731 - a no-op-only partition
    inputs = (torch.randn(1, 8, 3, 5),)
    assert not lower(model(), inputs, [inputs]).report.partitions
    r = lower(model(), inputs, [inputs], custom_delegation_options=("allow_noop_partitions",))
    assert len(r.report.partitions) == 1
    with pytest.raises(ValueError, match="allow_noop_partitions"):  # an unknown name is refused, naming the known
        lower(model(), inputs, [inputs], custom_delegation_options=("allow_everything",))


def check_constraints(env):
    """The constraint profile: a 10-class softmax head is delegated by 'sdk-current' only."""
    model = nn.Sequential(nn.Linear(16, 10), nn.Softmax(dim=-1)).eval()
    inputs = (torch.randn(1, 16),)
    ops = {c: lower(model, inputs, [inputs], constraints=c).report.delegated_ops for c in ("documented", "sdk-current")}
    assert "aten._softmax.default" not in ops["documented"] and "aten._softmax.default" in ops["sdk-current"]


def _vela_config_option(option, value):
    """Arm's compile-spec names: they reach Vela's flags (listed in the report) on an Ethos-U target and are refused,
    naming themselves, on a Neutron target."""
    def check(env):
        inputs = (torch.randn(1, 3, 6, 10),)
        value_ = value(env) if callable(value) else value
        flags = lower(conv_relu(), inputs, [inputs], target="ethos-u85-256", **{option: value_}).report.partitions[0].backend["vela_flags"]
        default = lower(conv_relu(), inputs, [inputs], target="ethos-u85-256").report.partitions[0].backend["vela_flags"]
        assert flags != default and any(str(value_) in f for f in flags), flags
        with pytest.raises(ValueError, match=option):
            NeutronCompileSpec(target="imxrt700", **{option: value_})
    return check


def check_transpose_form(env):
    """The conv's NCHW I/O transposes become rank 3 in the partition TFLite; refused on a Neutron target."""
    from executorch_neutron.tflite.reader import op_name, read_model

    inputs = (torch.randn(1, 3, 6, 10),)
    ranks = {}
    for form in ("4d", "collapsed"):
        part = lower(conv_relu(), inputs, [inputs], target="ethos-u85-256", transpose_form=form,
                     intermediates_dir=env.path / form).report.partitions[0]
        model = read_model((env.path / form / f"{part.tag}.tflite").read_bytes())
        sg = model.subgraphs[0]
        ranks[form] = [len(sg.tensors[o.inputs[0]].shape) for o in sg.operators if op_name(model, o) == "TRANSPOSE"]
    assert ranks == {"4d": [4, 4], "collapsed": [3, 3]}
    with pytest.raises(ValueError, match="transpose_form"):
        NeutronCompileSpec(target="imxrt700", transpose_form="collapsed")


def _copied_vela_ini(env) -> str:
    import ethosu

    ini = env.path / "my_vela.ini"
    ini.write_text((Path(list(ethosu.__path__)[0]) / "config_files" / "Arm" / "vela.ini").read_text())
    return str(ini)


EFFECTS = {
    "target": check_target,
    "extra_flags": _converter_only("extra_flags", "--exclude-graph-passes=A", "excludeGraphPasses", "A"),
    "operators_not_to_delegate": check_operators_not_to_delegate,
    "use_neutron_for_format_conversion": check_format_conversion,
    "fetch_constants_to_sram": _converter_only("fetch_constants_to_sram", True, "fetchConstantsToSRAM", True),
    "dump_kernel_selection_code": check_dump_kernel_selection_code,
    "intermediates_dir": check_intermediates_dir,
    "use_profiling": check_use_profiling,
    "reference": check_reference,
    "custom_delegation_options": check_custom_delegation_options,
    "embed_reference": check_embed_reference,
    "constraints": check_constraints,
    "system_config": _vela_config_option("system_config", "Ethos_U85_SYS_Flash_High"),
    "memory_mode": _vela_config_option("memory_mode", "Shared_Sram"),
    "config_ini": _vela_config_option("config_ini", _copied_vela_ini),
    "transpose_form": check_transpose_form,
}


def test_every_option_has_a_check():
    fields = {f.name for f in dataclasses.fields(NeutronCompileSpec)}
    assert fields <= set(EFFECTS), f"options without an effect check: {sorted(fields - set(EFFECTS))}"


@pytest.mark.parametrize("option", EFFECTS, ids=EFFECTS.keys())
def test_option_has_a_visible_effect_or_a_clear_refusal(option, env):
    EFFECTS[option](env)

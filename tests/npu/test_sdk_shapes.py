"""Both API shapes of NXP's eIQ Neutron SDK (docs/guide/sources.md, "The Neutron converter"), through the SDK test double:
`neutron_compiler.compileModel` (SDK after 3.2.2) first, `neutron_converter.convertModel` (SDK <= 3.2.2, deprecated)
as the fallback; the same payload bytes either way; the SDK's version and entry point recorded; profiling refused
with an SDK older than 3.2.1; kernel-selection code named per partition and never written into the working
directory."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_neutron_sdk as fake  # noqa: E402

from executorch_neutron.compile_spec import NeutronCompileSpec  # noqa: E402
from executorch_neutron.core.payload import Header, unpack  # noqa: E402
from executorch_neutron.neutron.npu import NeutronCompileError, compile_partition  # noqa: E402
from executorch_neutron.neutron.npu import compile as npu_compile  # noqa: E402
from executorch_neutron.neutron.npu.sdk_adapter import sdk_version, version_tuple  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from tflite_fixtures import add_relu_int8  # noqa: E402

HEADER = Header(n_args=2, input_formats=(0, 0), output_formats=(0,), input_args=(0, 1), output_args=(0,))


@pytest.fixture
def install(tmp_path, monkeypatch, caplog):
    """install(api, version) puts the SDK double of that shape on the path; returns the record file."""
    monkeypatch.setattr(npu_compile, "_legacy_warned", False)
    monkeypatch.chdir(tmp_path)
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_NEUTRON_RECORD", str(record))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")

    def put(api: str = "compiler", version: str | None = "3.3.0", where: str = "site") -> Path:
        fake.install(tmp_path / where, api=api, version=version)
        monkeypatch.syspath_prepend(str(tmp_path / where))
        for name in [m for m in sys.modules if m.startswith("eiq_neutron_sdk")]:
            monkeypatch.delitem(sys.modules, name)
        return record

    return put


def _compile(spec=None, name="neutron_0"):
    return compile_partition(add_relu_int8([1, 4, 5, 6]), HEADER, spec or NeutronCompileSpec(), name)


SHAPES = {"compiler": ("compiler", "neutron_compiler.compileModel"),
          "converter": ("converter", "neutron_converter.convertModel"),
          "both_prefers_compiler": ("both", "neutron_compiler.compileModel")}


@pytest.mark.parametrize("case", SHAPES.values(), ids=SHAPES.keys())
def test_each_api_shape_is_called_and_recorded(install, case):
    api, entry = case
    record = install(api)
    out = _compile()
    assert json.loads(record.read_text())["api"] == entry
    assert out.kind == "neutron-microcode"
    assert out.compiled_by == f"eIQ Neutron SDK 3.3.0 ({entry})"


def test_both_shapes_give_byte_identical_payloads(install):
    install("compiler", where="new")
    new = _compile()
    sys.path.remove(str(Path.cwd() / "new"))
    install("converter", where="old")
    old = _compile()
    assert new.blob == old.blob and unpack(new.blob).is_microcode


def test_the_legacy_shape_is_named_deprecated_once(install, caplog):
    install("converter", version="3.2.2")
    with caplog.at_level(logging.WARNING, logger="executorch_neutron"):
        _compile(name="neutron_0")
        _compile(name="neutron_1")
    notices = [r.getMessage() for r in caplog.records if "legacy converter API" in r.getMessage()]
    assert notices == [npu_compile.LEGACY_NOTICE.format(version="3.2.2")]


def test_the_current_shape_gives_no_deprecation_notice(install, caplog):
    install("compiler")
    with caplog.at_level(logging.WARNING, logger="executorch_neutron"):
        _compile()
    assert not [r for r in caplog.records if "legacy" in r.getMessage()]


def test_a_broken_current_module_is_an_error_not_a_silent_fallback(install, tmp_path):
    install("both")
    (tmp_path / "site" / "eiq_neutron_sdk" / "neutron_compiler.py").write_text("import no_such_native_library\n")
    with pytest.raises(NeutronCompileError, match="no_such_native_library"):
        _compile()


PROFILING = {"3.1.2_refused": ("3.1.2", "compiler", False), "3.2.0_refused": ("3.2.0", "converter", False),
             "3.2.1_ok": ("3.2.1", "converter", True), "3.3.0_ok": ("3.3.0", "compiler", True),
             "unknown_version_ok": (None, "compiler", True)}


@pytest.mark.parametrize("case", PROFILING.values(), ids=PROFILING.keys())
def test_profiling_needs_sdk_3_2_1(install, case, tmp_path):
    version, api, accepted = case
    record = install(api, version)
    spec = NeutronCompileSpec(use_profiling=True, intermediates_dir=str(tmp_path / "inter"))
    if not accepted:
        with pytest.raises(NeutronCompileError) as info:
            _compile(spec)
        assert str(info.value).startswith("use_profiling needs eIQ Neutron SDK >= 3.2.1")
        assert f"eiq-neutron-sdk {version} is installed" in str(info.value) and not record.exists()
        return
    out = _compile(spec)
    opts = json.loads(record.read_text())["options"]
    assert unpack(out.blob).header.version == 1
    # dumpMicrocode is set where the SDK has it (the current shape) and skipped where it does not (legacy)
    assert opts.get("dumpMicrocode", "absent") == (True if api == "compiler" else "absent")


@pytest.mark.fast
def test_sdk_version_comes_from_the_distribution_metadata(install):
    install("compiler", version="3.4.1")
    assert sdk_version() == "3.4.1"


VERSIONS = {"plain": ("3.2.1", (3, 2, 1)), "rc": ("3.3.0rc1", (3, 3, 0)), "post": ("3.2.2.post1", (3, 2, 2)),
            "two": ("3.3", (3, 3))}


@pytest.mark.fast
@pytest.mark.parametrize("case", VERSIONS.values(), ids=VERSIONS.keys())
def test_version_tuple(case):
    text, expected = case
    assert version_tuple(text) == expected


def test_kernel_selection_code_is_named_per_partition_and_not_written_to_the_cwd(install, tmp_path):
    install("compiler")
    out = _compile(NeutronCompileSpec(dump_kernel_selection_code=True), name="neutron_3")
    assert out.files == {"_kernel_selection_neutron_3.c": b"/* fake kernel selection */\n"}
    assert not [p for p in tmp_path.iterdir() if "kernel_selection" in p.name]
    out = _compile(NeutronCompileSpec(dump_kernel_selection_code=True, intermediates_dir=str(tmp_path / "i")),
                   name="neutron_3")
    assert out.files == {} and [p.name for p in (tmp_path / "i").iterdir()] == ["_kernel_selection_neutron_3.c"]

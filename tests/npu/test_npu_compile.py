"""NPU compile step: reference path, the eIQ SDK path through the fake converter, extraction and packing."""

from __future__ import annotations

import json
import logging
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_neutron_sdk as fake  # noqa: E402

from executorch_neutron.compile_spec import NeutronCompileSpec  # noqa: E402
from executorch_neutron.neutron.npu import (  # noqa: E402
    ConvertedModelError,
    NeutronCompileError,
    NeutronConverterCrash,
    compile_partition,
    sdk_available,
)
from executorch_neutron.neutron.npu import compile as npu_compile  # noqa: E402
from executorch_neutron.neutron.npu.extract import extract  # noqa: E402
from executorch_neutron.neutron.npu.sdk_adapter import converter_options, parse_extra_flags  # noqa: E402
from executorch_neutron.core.payload import MICROCODE_MAGIC, Header, unpack  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from tflite_fixtures import add_relu_int8, two_in_two_out_float  # noqa: E402

HEADER_2IN_1OUT = Header(n_args=3, input_formats=(1, 0), output_formats=(1,), input_args=(2, 0), output_args=(0,))
HEADER_2IN_2OUT = Header(n_args=2, input_formats=(0, 0), output_formats=(0, 1), input_args=(1, 0), output_args=(1, 0))


@pytest.fixture
def no_sdk(monkeypatch):
    """This machine as it is: no eIQ Neutron SDK installed (skips where the real SDK is present)."""
    if sdk_available():
        pytest.skip("the eIQ Neutron SDK is installed here")
    monkeypatch.setattr(npu_compile, "_notice_logged", False)  # start as a fresh process would


@pytest.fixture
def sdk(tmp_path, monkeypatch):
    """The fake eIQ Neutron SDK on sys.path (the converter child inherits it); returns the record file."""
    fake.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_NEUTRON_RECORD", str(record))
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "ok")
    return record


# ------------------------------------------------------------------------------------------ reference path


@pytest.mark.fast
def test_without_sdk_packs_a_reference_payload_and_logs_once(no_sdk, caplog):
    tflite = add_relu_int8([1, 4, 5, 6])
    with caplog.at_level(logging.WARNING, logger="executorch_neutron"):
        first = compile_partition(tflite, HEADER_2IN_1OUT, NeutronCompileSpec(), "neutron_0")
        compile_partition(tflite, HEADER_2IN_1OUT, NeutronCompileSpec(), "neutron_1")
    assert first.kind == "host-reference" and first.debug_handle_map is None
    payload = unpack(first.blob)
    assert payload.header == HEADER_2IN_1OUT and payload.tflite == tflite
    notices = [r.getMessage() for r in caplog.records if "SDK not found" in r.getMessage()]
    assert notices == [npu_compile.REFERENCE_NOTICE]


@pytest.mark.fast
def test_reference_true_skips_the_sdk_and_the_notice(sdk, caplog, monkeypatch):
    monkeypatch.setattr(npu_compile, "_notice_logged", False)
    with caplog.at_level(logging.WARNING, logger="executorch_neutron"):
        out = compile_partition(b"TFL", HEADER_2IN_1OUT, NeutronCompileSpec(reference=True), "p")
    assert sdk_available() and out.kind == "host-reference" and not sdk.exists() and not caplog.records


# ------------------------------------------------------------------------------------------ option mapping


DEFAULT_OPTIONS = {"minNumOpsPerGraph": 1, "excludeGraphPasses": "HoistSliceAboveTranspose,MergeTranspose",
                   "fetchConstantsToSRAM": False, "dumpKernelSelectionCode": False, "useProfiling": False,
                   "dumpAfterImport": None, "dumpAfterGenerate": None, "verbose": None}  # None: the SDK's default


@pytest.mark.fast
def test_default_options_reach_the_converter(sdk):
    out = compile_partition(add_relu_int8([1, 4]), HEADER_2IN_1OUT, NeutronCompileSpec(), "neutron_0")
    seen = json.loads(sdk.read_text())
    assert out.kind == "neutron-microcode"
    assert seen["api"] == "neutron_compiler.compileModel"
    assert seen["target"] == {"fake_target": "imxrt700"}
    assert seen["options"] == {**DEFAULT_OPTIONS, "dumpMicrocode": None}


def test_spec_options_and_extra_flags_reach_the_converter(sdk, tmp_path):
    spec = NeutronCompileSpec(fetch_constants_to_sram=True, dump_kernel_selection_code=True, use_profiling=True,
                              intermediates_dir=str(tmp_path / "inter"),
                              extra_flags="--exclude-graph-passes=fuse_pad --min_num_ops_per_graph 3 --verbose")
    out = compile_partition(add_relu_int8([1, 4]), HEADER_2IN_1OUT, spec, "neutron/7")
    opts = json.loads(sdk.read_text())["options"]
    assert opts == {"minNumOpsPerGraph": 3, "excludeGraphPasses": "fuse_pad", "fetchConstantsToSRAM": True,
                    "dumpKernelSelectionCode": True, "useProfiling": True, "dumpAfterImport": "console",
                    "dumpAfterGenerate": "console", "verbose": True, "dumpMicrocode": True}
    kept = sorted(p.name for p in (tmp_path / "inter").iterdir())
    assert kept == ["_kernel_selection_neutron_7.c", "neutron_7.converter_console.txt"]
    assert out.files == {}  # all written into intermediates_dir
    # console captured at file-descriptor level, both 1 and 2
    assert "FAKE-PROFILE fd1" in out.converter_console and "FAKE-PROFILE fd2" in out.converter_console


EXTRA_FLAGS = {
    "empty": ("", {}),
    "equals": ("--min-num-ops-per-graph=2", {"minNumOpsPerGraph": 2}),
    "separate_value": ("--exclude_graph_passes a,b", {"excludeGraphPasses": "a,b"}),
    "switch_then_flag": ("--verbose --dump-after-import=false", {"verbose": True, "dumpAfterImport": False}),
    "camel_kept": ("--fetchConstantsToSRAM true", {"fetchConstantsToSRAM": True}),
    "float_and_quotes": ("--ratio 0.5 --name 'a b'", {"ratio": 0.5, "name": "a b"}),
}


@pytest.mark.fast
@pytest.mark.parametrize("case", EXTRA_FLAGS.values(), ids=EXTRA_FLAGS.keys())
def test_parse_extra_flags(case):
    text, expected = case
    assert parse_extra_flags(text) == expected


@pytest.mark.fast
def test_extra_flags_override_spec_options():
    spec = NeutronCompileSpec(use_profiling=True, extra_flags="--dump-after-generate=file")
    assert converter_options(spec)["dumpAfterGenerate"] == "file" and converter_options(spec)["useProfiling"] is True


@pytest.mark.fast
def test_unreadable_extra_flags_say_how_to_write_them():
    with pytest.raises(NeutronCompileError, match="--name=value"):
        parse_extra_flags("verbose")


def test_unknown_converter_option_is_a_clear_error(sdk):
    spec = NeutronCompileSpec(extra_flags="--no-such-option 1")
    with pytest.raises(NeutronCompileError, match="no option 'noSuchOption'.*minNumOpsPerGraph"):
        compile_partition(add_relu_int8([1, 4]), HEADER_2IN_1OUT, spec, "neutron_0")


def test_imxrt700cm_partitions_compile_for_the_imxrt700_npu(sdk):
    """imxrt700cm adds the Cortex-M33 for leftovers; its NPU partitions are compiled for the converter's imxrt700."""
    out = compile_partition(add_relu_int8([1, 4]), HEADER_2IN_1OUT, NeutronCompileSpec(target="imxrt700cm"), "neutron_0")
    assert out.kind == "neutron-microcode"
    assert json.loads(sdk.read_text())["target"] == {"fake_target": "imxrt700"}


def test_target_unknown_to_the_sdk_is_named_with_the_supported_ones(sdk):
    with pytest.raises(NeutronCompileError, match="'neutron_0'.*does not know target 'mcxn94x'.*imxrt700"):
        compile_partition(add_relu_int8([1, 4]), HEADER_2IN_1OUT, NeutronCompileSpec(target="mcxn94x"), "neutron_0")


# ------------------------------------------------------------------------------------------ child process failures


def test_converter_crash_becomes_a_clear_error(sdk, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "abort")
    spec = NeutronCompileSpec(intermediates_dir=str(tmp_path / "inter"))
    with pytest.raises(NeutronConverterCrash) as info:
        compile_partition(add_relu_int8([1, 4]), HEADER_2IN_1OUT, spec, "neutron_3")
    message = str(info.value)
    assert "crashed (SIGABRT)" in message and "'neutron_3'" in message
    assert "operators_not_to_delegate" in message and "reference=True" in message
    assert (tmp_path / "inter" / "neutron_3.failed.tflite").read_bytes() == add_relu_int8([1, 4])


def test_converter_exception_carries_its_message(sdk, monkeypatch):
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "raise")
    with pytest.raises(NeutronCompileError, match="'neutron_0'.*fake converter refused the model"):
        compile_partition(add_relu_int8([1, 4]), HEADER_2IN_1OUT, NeutronCompileSpec(), "neutron_0")


def test_garbage_output_is_a_clear_error(sdk, monkeypatch):
    monkeypatch.setenv("FAKE_NEUTRON_MODE", "garbage")
    with pytest.raises(ConvertedModelError, match="not a TFLite flatbuffer"):
        compile_partition(add_relu_int8([1, 4]), HEADER_2IN_1OUT, NeutronCompileSpec(), "neutron_0")


# ------------------------------------------------------------------------------------------ extraction


BAD_OUTPUTS = {
    "two_ops": "2 operators",
    "not_custom": "'SomethingElse', not a NeutronGraph",
    "bad_magic": "magic 0xDEADBEEF",
    "bad_microcode_size": "word 6 says 89 bytes but the buffer holds 73",
    "bad_weights_size": "word 7 says 38 weight bytes but the weights buffer holds 37",
    "wrong_inputs": "has 4 inputs \\[tensor 0 .a., tensor 3 .microcode.*\\]; expected",
    "wrong_outputs": "has 3 outputs \\[.*tensor 7 .surplus.\\]; expected",
}


@pytest.mark.fast
@pytest.mark.parametrize("mode", BAD_OUTPUTS, ids=BAD_OUTPUTS.keys())
def test_bad_converter_output_is_rejected(mode):
    converted = fake.neutron_graph_model(add_relu_int8([1, 4]), mode)
    with pytest.raises(ConvertedModelError, match=BAD_OUTPUTS[mode]) as info:
        extract(converted, n_inputs=2, n_outputs=1, name="neutron_5")
    assert "'neutron_5'" in str(info.value)


@pytest.mark.fast
@pytest.mark.parametrize("mode,version", [("ok", 0), ("profile", 1)])
def test_version_follows_the_node_outputs(mode, version):
    parts = extract(fake.neutron_graph_model(two_in_two_out_float([2, 3]), mode), n_inputs=2, n_outputs=2)
    assert parts.version == version


@pytest.mark.parametrize("mode,header,source", [
    ("ok", HEADER_2IN_1OUT, lambda: add_relu_int8([1, 4, 5, 6])),
    ("profile", HEADER_2IN_2OUT, lambda: two_in_two_out_float([2, 3])),
], ids=["version0", "version1"])
def test_device_payload_is_packed_byte_exactly(sdk, monkeypatch, mode, header, source):
    monkeypatch.setenv("FAKE_NEUTRON_MODE", mode)
    tflite = source()
    out = compile_partition(tflite, header, NeutronCompileSpec(), "neutron_0")
    blob = out.blob
    # header, field by field
    n_in, n_out = header.n_inputs, header.n_outputs
    assert (blob[0], blob[1], blob[2]) == (n_in, n_out, header.n_args)
    pos = 3
    for expected in (header.input_formats, header.output_formats, header.input_args, header.output_args):
        assert tuple(blob[pos:pos + len(expected)]) == expected
        pos += len(expected)
    assert blob[pos] == (1 if mode == "profile" else 0)
    assert not any(blob[pos + 1:16])
    # microcode, weights, kernels, each at a 16-byte boundary and zero-padded
    microcode = fake.fake_microcode(tflite, n_in, n_out, fake.WEIGHTS, mode)
    words = struct.unpack_from("<8I", blob, 16)
    assert words[0] == MICROCODE_MAGIC and words[6] == len(microcode) == 73 and words[7] == len(fake.WEIGHTS)
    assert blob[16:16 + 73] == microcode and not any(blob[16 + 73:16 + 80])
    assert blob[96:96 + 37] == fake.WEIGHTS and not any(blob[96 + 37:144])
    assert blob[144:144 + 21] == fake.KERNELS and not any(blob[144 + 21:]) and len(blob) == 176
    assert out.kind == "neutron-microcode"
    back = unpack(blob)
    assert back.is_microcode and back.header.version == (1 if mode == "profile" else 0)
    assert np.array_equal(np.frombuffer(back.weights, np.uint8), np.frombuffer(fake.WEIGHTS, np.uint8))

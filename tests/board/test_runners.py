"""Runner profiles: the modelrunner table as NXP's RegisterKernels.cpp registers it (and the one delegate its engine
links, for the chip it is built for), custom files, and the check naming each CPU operator and delegate a runner
lacks."""

import pytest

from executorch_neutron.board.runners import MissingDelegate, RunnerError, check_kernels, load_runner, too_big

pytestmark = pytest.mark.fast


def test_modelrunner_profile_holds_the_firmware_table():
    runner = load_runner("modelrunner")
    assert len(runner.kernels) == 43  # the entries of kernels_to_register[] in RegisterKernels.cpp
    assert {"aten::convolution.out", "quantized_decomposed::quantize_per_tensor.out",
            "dim_order_ops::_clone_dim_order.out", "aten::mean.out"} <= runner.kernels
    assert runner.buffers["model"] == 384 * 1024
    assert runner.delegates == {"NeutronBackend"} and runner.target == "imxrt700"  # an i.MX RT700 firmware


def test_check_names_each_missing_operator_and_what_to_do():
    runner = load_runner("modelrunner")
    findings = check_kernels({"aten::convolution.out": 1, "aten::hardswish.out": 2,
                              "cortex_m::quantized_add.out": 1}, runner)
    assert [f.operator for f in findings] == ["aten::hardswish.out", "cortex_m::quantized_add.out"]
    assert "error 0x14" in str(findings[0]) and "imxrt700cm" in str(findings[0])
    assert "RegisterKernels.cpp" in str(findings[0])
    assert "--target imxrt700" in str(findings[1]) and "2 calls" in str(findings[0])


def test_custom_runner_file(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("# my firmware\naten::add.out   # adds\n\nquantized_decomposed::quantize_per_tensor.out\n")
    runner = load_runner(f)
    assert runner.kernels == {"aten::add.out", "quantized_decomposed::quantize_per_tensor.out"}
    assert runner.buffers == {}
    assert check_kernels({"aten::add.out": 3}, runner) == []


@pytest.mark.parametrize("text", ["", "# only comments\n", "add\n", "aten::add out\n"])
def test_bad_runner_file(tmp_path, text):
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(RunnerError):
        load_runner(f)


def test_unknown_runner():
    with pytest.raises(RunnerError, match="neither a profile"):
        load_runner("nxp-firmware-that-does-not-exist")


def test_too_big_says_by_how_much():
    runner = load_runner("modelrunner")
    assert too_big(393216, runner) is None
    assert "1,000 more than" in too_big(394216, runner)


@pytest.mark.parametrize("text, delegates, target", [
    ("aten::add.out\n", {"NeutronBackend"}, None),  # no delegate line: NXP's firmware's delegate
    ("aten::add.out\ndelegate EthosUBackend  # Arm's\n", {"EthosUBackend"}, None),
    ("delegate NeutronBackend\ndelegate EthosUBackend\ntarget imx93\naten::add.out\n",
     {"NeutronBackend", "EthosUBackend"}, "imx93"),
], ids=["default", "ethos-u", "two-and-a-target"])
def test_runner_file_declares_delegates(tmp_path, text, delegates, target):
    f = tmp_path / "mine.txt"
    f.write_text(text)
    runner = load_runner(f)
    assert runner.kernels == {"aten::add.out"} and runner.delegates == delegates and runner.target == target


def test_runner_file_with_two_targets_is_refused(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("aten::add.out\ntarget imxrt700\ntarget imx93\n")
    with pytest.raises(RunnerError, match="names 2 targets"):
        load_runner(f)


@pytest.mark.parametrize("runner_file, says", [
    (None, ["EthosUBackend (1 partition) is not registered by modelrunner's firmware, which registers NeutronBackend",
            "error 0x14", "lower for --target imxrt700"]),
    ("aten::add.out\n", ["lower for a target of NeutronBackend (", "imxrt700", "add a line `delegate EthosUBackend`"]),
], ids=["profile", "file"])
def test_missing_delegate_names_it_and_the_target(tmp_path, runner_file, says):
    runner = load_runner("modelrunner")
    if runner_file:
        (tmp_path / "mine.txt").write_text(runner_file)
        runner = load_runner(tmp_path / "mine.txt")
    line = str(MissingDelegate("EthosUBackend", 1, runner))
    assert all(part in line for part in says), line

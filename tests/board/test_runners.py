"""Runner kernel profiles: the modelrunner table as NXP's RegisterKernels.cpp registers it, custom files, and the
check naming each CPU operator a runner lacks."""

import pytest

from executorch_neutron.board.runners import RunnerError, check_kernels, load_runner, too_big

pytestmark = pytest.mark.fast


def test_modelrunner_profile_holds_the_firmware_table():
    runner = load_runner("modelrunner")
    assert len(runner.kernels) == 43  # the entries of kernels_to_register[] in RegisterKernels.cpp
    assert {"aten::convolution.out", "quantized_decomposed::quantize_per_tensor.out",
            "dim_order_ops::_clone_dim_order.out", "aten::mean.out"} <= runner.kernels
    assert runner.buffers["model"] == 384 * 1024


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

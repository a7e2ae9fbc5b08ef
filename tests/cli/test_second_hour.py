"""What a newcomer meets in the second hour (issue 44), through `cli.main` in this process: error lines that keep
their what-to-do part, `--verbose` that adds a traceback without changing the exit code or dropping the hint, and
precision settings that get a precision hint."""

import pytest

from executorch_neutron import cli
from executorch_neutron.core.messages import elide

RAISING = '''
def factory():
    raise RuntimeError("the factory broke: " + "detail " * 150 + "so call it with a real checkpoint")
'''

TINY = '''
import torch
from torch import nn


def factory():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 3))
    return model.eval(), (torch.randn(1, 3, 9, 7),)
'''


def _run(capsys, *argv) -> tuple[int, list[str], str]:
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if line.startswith(("error:", "hint:"))], err


@pytest.fixture
def models(tmp_path):
    (tmp_path / "raising.py").write_text(RAISING)
    (tmp_path / "tiny.py").write_text(TINY)
    return tmp_path




@pytest.mark.parametrize("verbose", [False, True], ids=["plain", "verbose"])
@pytest.mark.parametrize("argv", [
    ["compile", "{d}/tiny.py:factory", "--target", "imxrt999", "-o", "{d}/x.pte"],
    ["compile", "{d}/raising.py:factory", "-o", "{d}/x.pte"],
], ids=["unknown_target", "raising_factory"])
def test_verbose_adds_the_traceback_and_keeps_exit_code_and_hint(models, capsys, argv, verbose):
    argv = [a.format(d=models) for a in argv] + (["--verbose"] if verbose else [])
    code, lines, err = _run(capsys, *argv)
    assert code == 2, err
    assert lines[0].startswith("error:") and lines[1].startswith("hint:"), err
    assert ("Traceback (most recent call last)" in err) is verbose


def test_a_long_error_keeps_what_to_do(models, capsys):
    code, lines, err = _run(capsys, "compile", f"{models}/raising.py:factory", "-o", models / "x.pte")
    assert code == 2
    assert lines[0].endswith("so call it with a real checkpoint"), lines[0][-80:]


def test_a_long_line_is_elided_in_the_middle_between_words():
    text = "start " + "word " * 1000 + "what to do"
    line = elide(text, 2000)
    assert len(line) < 2100 and line.startswith("start word") and line.endswith("what to do")
    assert "characters left out" in line and "wor " not in line and " ord" not in line


@pytest.mark.parametrize("precision, target, cause", [
    ("0=flaot", "imxrt700", "0=flaot is not KEY=PRECISION"),
    ("blokc=float", "imxrt700", "the model has no module 'blokc'"),
    ("default=int16", "imxrt700", "int16"),
], ids=["bad_precision", "misspelt_module", "int16_on_neutron"])
def test_precision_mistakes_get_a_precision_hint(models, capsys, precision, target, cause):
    code, lines, err = _run(capsys, "compile", f"{models}/tiny.py:factory", "--random-calibration", "--target", target,
                            "--precision", precision, "-o", models / "x.pte")
    assert code == 2, err
    assert cause in lines[0], lines
    assert "--precision" in lines[1] and "--verbose shows where" not in lines[1], lines


def test_quantized_io_with_a_float_first_layer_names_the_operator(models, capsys):
    code, lines, err = _run(capsys, "compile", f"{models}/tiny.py:factory", "--random-calibration", "--precision",
                            "0=float", "--quantized-io", "-o", models / "x.pte")
    assert code == 2, err
    assert "aten.convolution.default" in lines[0] and "schema" not in lines[0] and "EdgeOpOverload" not in lines[0]
    assert "lower without quantized I/O" in lines[0]

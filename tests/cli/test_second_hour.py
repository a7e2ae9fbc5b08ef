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


TWO_INPUTS = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 4, 1), nn.Conv2d(2, 4, 1)

    def forward(self, x, y):
        return self.a(x) + self.b(y)


def factory():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 3, 6, 5), torch.randn(1, 2, 6, 5))
'''


def test_input_takes_several_files_after_one_flag_and_calibration_takes_a_file(tmp_path, capsys):
    """`--input a.npy b.npy` feeds a two-input model; `--calibration calib.npy` (one (N, ...) array) is N samples."""
    import numpy as np

    (tmp_path / "two.py").write_text(TWO_INPUTS)
    (tmp_path / "tiny.py").write_text(TINY)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "calib.npy", rng.standard_normal((6, 1, 3, 9, 7)).astype(np.float32))
    code, lines, err = _run(capsys, "compile", f"{tmp_path}/tiny.py:factory", "--calibration", tmp_path / "calib.npy",
                            "-o", tmp_path / "tiny.pte")
    assert code == 0, err
    code, lines, err = _run(capsys, "compile", f"{tmp_path}/two.py:factory", "--random-calibration",
                            "-o", tmp_path / "two.pte")
    assert code == 0, err
    np.save(tmp_path / "x.npy", rng.standard_normal((1, 3, 6, 5)).astype(np.float32))
    np.save(tmp_path / "y.npy", rng.standard_normal((1, 2, 6, 5)).astype(np.float32))
    outputs = {}
    for name, flags in {"one_flag": ["--input", tmp_path / "x.npy", tmp_path / "y.npy"],
                        "repeated": ["--input", tmp_path / "x.npy", "--input", tmp_path / "y.npy"]}.items():
        code, lines, err = _run(capsys, "run", tmp_path / "two.pte", *flags, "--save-outputs", tmp_path / name)
        assert code == 0, err
        outputs[name] = np.load(tmp_path / name / "output_0.npy")
    assert np.array_equal(outputs["one_flag"], outputs["repeated"])


def test_calibration_of_a_file_that_is_no_sample_is_refused(tmp_path, capsys):
    (tmp_path / "tiny.py").write_text(TINY)
    (tmp_path / "calib.txt").write_text("1 2 3")
    code, lines, err = _run(capsys, "compile", f"{tmp_path}/tiny.py:factory", "--calibration", tmp_path / "calib.txt",
                            "-o", tmp_path / "x.pte")
    assert code == 2, err
    assert "calib.txt is not a .npy, .npz or .pt file" in lines[0] and "or one such file" in lines[1]


def test_report_names_integer_dtypes_as_users_write_them(models, capsys):
    """A quantized-I/O .pte takes int8 tensors: the report says int8[...], not ExecuTorch's C name char[...]."""
    code, _, err = _run(capsys, "compile", f"{models}/tiny.py:factory", "--random-calibration", "--quantized-io",
                        "-o", models / "q.pte")
    assert code == 0, err
    code = cli.main(["report", str(models / "q.pte")])
    out = capsys.readouterr().out
    assert code == 0
    assert "inputs int8[1, 3, 9, 7] -> outputs int8[1, 4, 5, 3]" in out and "char[" not in out, out


@pytest.mark.parametrize("command", ["report", "run", "compare", "evaluate", "targets"])
def test_every_argument_has_help(command):
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    missing = [a.dest for a in sub._actions if not a.help and a.dest != "help"]
    assert not missing, f"{command}: {missing} have no help text"


def test_the_guide_ships_in_the_package_and_hints_name_it(capsys):
    """Hints name documentation a user of the installed wheel can open: `executorch-neutron guide PAGE` prints the
    page (the package's guide/ is the repository's docs/guide, listed in package-data); no hint names a repository
    path."""
    from pathlib import Path

    import executorch_neutron

    root = Path(__file__).resolve().parents[2]
    assert cli.main(["guide", "board"]) == 0
    assert capsys.readouterr().out == (root / "docs" / "guide" / "board.md").read_text()
    assert cli.main(["guide"]) == 0
    listed = capsys.readouterr().out
    assert all(f"  {p.stem} " in listed for p in (root / "docs" / "guide").glob("*.md"))
    package = Path(executorch_neutron.__file__).parent
    offenders = [f"{f.relative_to(package)}:{i}" for f in package.rglob("*.py") if "guide" not in f.parts
                 for i, line in enumerate(f.read_text().splitlines(), 1)
                 if ("hint" in line or "UserError(" in line or "help=" in line) and "docs/guide" in line]
    assert not offenders, offenders

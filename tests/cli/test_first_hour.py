"""What a new user meets in the first hour (issue 37), through `cli.main` in this process: a model with a CPU op the
host runtime has no kernel for, options after the command, and the wrong files given to `run`."""

import logging

import numpy as np
import pytest

from executorch_neutron import cli

SORT = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        values, _ = torch.sort(self.conv(x).flatten(1), dim=1)
        return values


def factory():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 3, 10, 12),)
'''


@pytest.fixture(scope="module")
def sort_pte(tmp_path_factory):
    """`compile` of a model whose CPU part sorts (aten::sort.values: not among ExecuTorch's portable kernels), with
    an HTML report; returns the directory, the exit code and the warnings logged."""
    d = tmp_path_factory.mktemp("first_hour")
    (d / "model.py").write_text(SORT)
    np.save(d / "x.npy", np.random.default_rng(0).standard_normal((1, 3, 10, 12)).astype(np.float32))
    np.save(d / "x_int64.npy", np.ones((1, 3, 10, 12), np.int64))
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("executorch_neutron").addHandler(handler)
    try:
        code = cli.main(["compile", f"{d}/model.py:factory", "--random-calibration", "-o", str(d / "sort.pte"),
                         "--report", str(d / "sort.html")])
    finally:
        logging.getLogger("executorch_neutron").removeHandler(handler)
    return d, code, [r.getMessage() for r in records]


def _run(capsys, *argv) -> tuple[int, list[str]]:
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if line.startswith(("error:", "hint:"))]


def test_compile_writes_the_html_report_and_warns_of_the_missing_host_kernel(sort_pte):
    d, code, warnings = sort_pte
    assert code == 0
    assert "aten_sort" in (d / "sort.html").read_text()
    assert any("aten::sort.values" in w and "no kernel in the host runtime" in w for w in warnings), warnings


def test_run_names_the_missing_kernel_not_a_damaged_file(sort_pte, capsys):
    d, *_ = sort_pte
    code, lines = _run(capsys, "run", d / "sort.pte", "--input", d / "x.npy")
    assert code == 1, lines
    assert "aten::sort.values" in lines[0] and "no kernel in this runtime" in lines[0], lines
    assert not any("damaged" in line for line in lines), lines


@pytest.mark.parametrize("argv", [["--verbose", "targets"], ["targets", "--verbose"],
                                  ["compile", "m.py:f", "-o", "x.pte", "--verbose"]])
def test_verbose_before_or_after_the_command(argv):
    assert cli.build_parser().parse_args(argv).verbose is True


def test_global_options_default_off():
    args = cli.build_parser().parse_args(["targets"])
    assert args.verbose is False and args.quiet is False


def test_input_directory_is_named_a_directory(sort_pte, capsys):
    d, *_ = sort_pte
    code, lines = _run(capsys, "run", d / "sort.pte", "--input", d)
    assert code == 2
    assert lines[0] == f"error: {d} is a directory, not a tensor file", lines


def test_integer_input_for_a_float_program_is_refused(sort_pte, capsys):
    d, *_ = sort_pte
    code, lines = _run(capsys, "run", d / "sort.pte", "--input", d / "x_int64.npy")
    assert code == 2
    assert "holds int64 values, but input 0 of the program is float32" in lines[0], lines


@pytest.mark.parametrize("content, expected", [
    (bytes(range(256)) * 12, "is not an ExecuTorch program: its file identifier is"),
    (b"\x1c\x00\x00\x00TFL3" + bytes(300), "it is a TFLite model (file identifier b'TFL3'), not a .pte"),
    (b"\x1c\x00\x00\x00ET12" + bytes(range(256)) * 4, "ExecuTorch cannot parse it (the file is truncated or damaged)"),
], ids=["random", "tflite", "truncated"])
@pytest.mark.parametrize("command", ["run", "report"])
def test_not_a_pte_is_one_clear_line(sort_pte, capsys, content, expected, command):
    d, *_ = sort_pte
    path = d / "not.pte"
    path.write_bytes(content)
    code, lines = _run(capsys, command, path, *(["--input", d / "x.npy"] if command == "run" else []))
    assert code == 2
    assert len(lines) == 2 and expected in lines[0], lines
    assert "unpack_from" not in lines[0] and "struct" not in lines[0], lines


TINY = '''
import torch
from torch import nn


def factory():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).eval(), (torch.randn(1, 3, 10, 12),)


def cpu_only():
    return nn.Sequential(nn.Flatten(), nn.LogSoftmax(-1)).eval(), (torch.randn(1, 3, 10, 12),)
'''


@pytest.fixture(scope="module")
def ethos_u(tmp_path_factory):
    """An imx93 (Ethos-U) .pte of a small model with its HTML report, and its input."""
    d = tmp_path_factory.mktemp("ethos_u")
    (d / "tiny.py").write_text(TINY)
    np.save(d / "x.npy", np.random.default_rng(0).standard_normal((1, 3, 10, 12)).astype(np.float32))
    code = cli.main(["compile", f"{d}/tiny.py:factory", "--random-calibration", "--target", "imx93", "-o",
                     str(d / "tiny.pte"), "--report", str(d / "tiny.html")])
    assert code == 0
    return d


def test_ethos_u_html_report_names_no_neutron(ethos_u):
    html = (ethos_u / "tiny.html").read_text()
    assert "Ethos-U" in html and "Neutron" not in html


def test_ethos_u_profile_names_no_neutron_and_keeps_no_temporary_files(ethos_u, capsys, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where profile's temporary files would stay
    code = cli.main(["profile", str(ethos_u / "tiny.pte"), "--input", str(ethos_u / "x.npy"), "--runs", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Ethos-U delegates run host-reference payloads" in out and "Neutron" not in out, out
    assert (ethos_u / "tiny.trace.json").is_file()  # the Chrome trace beside the .pte
    assert f"wrote {ethos_u / 'tiny.trace.json'}" in out
    assert list(tmp_path.iterdir()) == []


def test_ethos_u_nothing_delegated_names_the_ethos_u_npu(ethos_u, capsys):
    code = cli.main(["compile", f"{ethos_u}/tiny.py:cpu_only", "--random-calibration", "--target", "imx93", "-o",
                     str(ethos_u / "cpu.pte")])
    err = capsys.readouterr().err
    assert code == 3
    assert "error: no node was delegated to the Ethos-U NPU" in err, err


def _vela_limits() -> set[str]:
    from executorch_neutron.ethos_u.constraints import LIMITS

    return {c.text for _, c in LIMITS}


def test_ops_for_an_ethos_u_target_lists_vela_limits(capsys):
    assert cli.main(["ops", "--target", "imx93"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert "imx93" in header and "Ethos-U" in header and "Neutron" not in header, header
    limits = _vela_limits()
    assert limits and all(text in out for text in limits), sorted(t for t in limits if t not in out)
    assert "[Neutron only]" not in out


def test_ops_for_a_neutron_target_lists_no_vela_limit(capsys):
    assert cli.main(["ops", "--target", "imxrt700"]) == 0
    out = capsys.readouterr().out
    assert "Neutron" in out.splitlines()[0]
    assert not any(text in out for text in _vela_limits())


def test_compare_says_nothing_of_a_pte_it_does_not_write(tmp_path):
    """In a fresh process (the eIQ SDK notice is logged once per process): `compare` lowers but writes no .pte."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "tiny.py").write_text(TINY)
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run([sys.executable, "-m", "executorch_neutron", "compare", "tiny.py:factory",
                           "--random-calibration", "--max-samples", "1"], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=src), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ".pte" not in proc.stderr, proc.stderr
    assert not list(tmp_path.glob("*.pte"))


def test_cortex_m_stage_logs_no_pass_manager_deprecation(caplog):
    import torch

    from executorch_neutron import lower

    torch.manual_seed(0)
    model, inputs = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Softmax(1)).eval(), (torch.randn(1, 3, 8, 8),)
    with caplog.at_level(logging.WARNING):
        lower(model, inputs, [inputs], target="imxrt700cm")
    assert not [r for r in caplog.records if "PassManager is deprecated" in r.getMessage()]

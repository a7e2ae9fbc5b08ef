"""`executorch-neutron evaluate` end to end on an .npz written here: exit 0, the table or JSON with every row, the
HTML report with its accuracy section; a bad data set is refused in one line before torch is imported."""

import json

import numpy as np
import pytest

from executorch_neutron import cli

MODEL = '''
import torch

def factory():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(64, 6))
    return model.eval(), (torch.randn(1, 1, 6, 6),)
'''


@pytest.fixture
def files(tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x=rng.standard_normal((20, 1, 6, 6)).astype(np.float32), y=rng.integers(0, 6, 20))
    return tmp_path


def test_json_and_html(files, capsys):
    code = cli.main(["evaluate", str(files / "m.py:factory"), "--data", str(files / "d.npz"), "--json",
                     "--html", str(files / "r.html"), "--calibration-samples", "8", "--limit", "12"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(out)
    assert d["task"] == "classification" and d["samples"] == 12 and d["target"] == "imxrt700"
    assert [r["name"] for r in d["rows"]] == ["float PyTorch", "quantized PyTorch", ".pte on the host"]
    assert all(0 <= r["metrics"]["top-1"] <= r["metrics"]["top-5"] <= 1 for r in d["rows"])
    assert "the first 8 sample(s)" in d["calibration"]
    assert "Accuracy on d.npz" in (files / "r.html").read_text()


def test_table_for_an_ethos_u_target_as_regression(files, capsys):
    code = cli.main(["evaluate", str(files / "m.py:factory"), "--data", str(files / "d.npz"), "--target", "imx93",
                     "--task", "regression", "--limit", "4", "--calibration-samples", "4"])
    out, err = capsys.readouterr()
    assert code == 2 and "y holds 1 value(s) per sample but the model's output 0 has 6" in err
    np.savez(files / "r.npz", x=np.ones((4, 1, 6, 6), np.float32), y=np.ones((4, 6), np.float32))
    code = cli.main(["evaluate", str(files / "m.py:factory"), "--data", str(files / "r.npz"), "--target", "imx93"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "task: regression (inferred" in out and ".pte on the host" in out and "SQNR dB" in out


def test_a_missing_data_set_is_one_line(files, capsys):
    code = cli.main(["evaluate", str(files / "m.py:factory"), "--data", str(files / "nope.npz")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 2 and err.startswith("error: no such file or directory")

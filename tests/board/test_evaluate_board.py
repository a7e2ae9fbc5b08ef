"""`evaluate(..., device=PORT)` against the TEST DOUBLE of NXP's modelrunner firmware: the model is uploaded once,
every sample runs on the "board", and its row equals the host run's row (the double executes the .pte with the
host runtime), outputs byte for byte; through the CLI too, and a .pte the firmware cannot load is refused in one
line before uploading."""

import json

import numpy as np
import pytest
import torch

from executorch_neutron import cli
from executorch_neutron.evaluation import evaluate
from executorch_neutron.evaluation.result import BOARD, HOST

WAIT = 120.0  # seconds per answer on a shared, busy machine


def test_board_row_is_the_host_row(modelrunner):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 7 * 5, 5)).eval()
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 3, 9, 7)).astype(np.float32), rng.integers(0, 5, 6)
    r = evaluate(model, (x, y), target="imxrt700", calibration_samples=6, device=modelrunner(), timeout=WAIT)
    assert [row.name for row in r.rows][-2:] == [HOST, BOARD]
    assert r.row(BOARD).metrics == r.row(HOST).metrics
    assert r.outputs[BOARD].tobytes() == r.outputs[HOST].tobytes()


FACTORY = '''
import torch
from torch import nn

def factory():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.Hardswish(), nn.Flatten(), nn.Linear(8 * 7 * 5, 5)).eval(), \\
        (torch.randn(1, 3, 9, 7),)
'''


@pytest.fixture
def files(tmp_path):
    (tmp_path / "m.py").write_text(FACTORY)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x=rng.standard_normal((4, 3, 9, 7)).astype(np.float32), y=rng.integers(0, 5, 4))
    return tmp_path


def test_cli_evaluate_on_the_board(modelrunner, files, capsys):
    code = cli.main(["evaluate", f"{files / 'm.py'}:factory", "--data", str(files / "d.npz"), "--json",
                     "--device", modelrunner(), "--timeout", str(WAIT)])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = {r["name"]: r["metrics"] for r in json.loads(out)["rows"]}
    assert rows[BOARD] == rows[HOST]


def test_cli_evaluate_refuses_a_pte_the_firmware_cannot_load(modelrunner, files, capsys):
    code = cli.main(["evaluate", f"{files / 'm.py'}:factory", "--data", str(files / "d.npz"), "--device",
                     modelrunner(), "--operators-not-to-delegate", "aten.hardswish.default"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 2
    assert "dim_order_ops::_to_dim_order_copy.out" in err

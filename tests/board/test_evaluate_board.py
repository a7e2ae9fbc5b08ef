"""`evaluate(..., device=PORT)` against the TEST DOUBLE of NXP's modelrunner firmware: the model is uploaded once,
every sample runs on the "board", and its row equals the host run's row (the double executes the .pte with the
host runtime), outputs byte for byte."""

import numpy as np
import torch

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

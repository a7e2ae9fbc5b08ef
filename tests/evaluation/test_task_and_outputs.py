"""evaluate's choices a newcomer reads (issue 44): the task inferred from the labels so that the right message comes
first, top-5 only where it can be below 100 %, and which output the metrics score."""

import numpy as np
import pytest
import torch
from torch import nn

from executorch_neutron.evaluation import evaluate
from executorch_neutron.evaluation.result import HOST
from executorch_neutron.models.loading import UserError


class TwoHeads(nn.Module):
    """Five class scores and a second output (an auxiliary head) that evaluate does not score."""

    def __init__(self):
        super().__init__()
        self.body, self.cls, self.aux = nn.Linear(6, 8), nn.Linear(8, 5), nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.cls(h), self.aux(h)


def _data(n=16, classes=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 6)).astype(np.float32), rng.integers(0, classes, n)


def test_labels_outside_the_outputs_get_the_classification_message():
    torch.manual_seed(0)
    x, y = _data()
    y[3] = 12
    with pytest.raises(UserError, match=r"label 12 of sample 3 is outside the classifier's 5 outputs \(0..4\)"):
        evaluate(TwoHeads().eval(), (x, y), target="imxrt700")


def test_two_outputs_five_classes():
    torch.manual_seed(0)
    x, y = _data()
    r = evaluate(TwoHeads().eval(), (x, y), target="imxrt700", calibration_samples=8)
    assert r.task == "classification" and r.task_source.startswith("inferred")
    assert r.scored.startswith("output 0 of 2") and "not scored" in r.scored
    assert "scored: output 0 of 2" in str(r) and r.to_dict()["scored"] == r.scored
    assert r.row(HOST).metrics["top-5"] is None  # 5 classes: top-5 would always be 100 %
    expected = float(np.mean(r.outputs[HOST].argmax(1) == y))  # top-1 from the .pte's own outputs, by numpy
    assert r.row(HOST).metrics["top-1"] == pytest.approx(expected)

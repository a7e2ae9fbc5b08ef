"""evaluate(): a labelled data set -> top-1/top-5 or RMSE/MAE/cosine/SQNR per stage (float, quantized PyTorch, the
.pte on the host), on models trained here on scikit-learn's digits and diabetes sets. References: the .pte run
independently with `runtime.run` and the metrics computed here with numpy from the raw outputs."""

import json
import math

import numpy as np
import pytest
import torch
from tqdm import tqdm

from executorch_neutron.evaluation import evaluate
from executorch_neutron.evaluation.result import FLOAT, HOST, QUANTIZED
from executorch_neutron.runtime import run

import trained_models as trained

PTE_VS_QUANTIZED_TOP1 = 0.02  # the .pte's top-1 stays within 2 points of PyTorch's quantized model's


@pytest.fixture(scope="module")
def digits():
    model, inputs, (x, y) = trained.digits_cnn()
    return model, inputs, x, y, evaluate(model, (x, y), inputs, target="imxrt700")


@pytest.fixture(scope="module")
def diabetes():
    model, inputs, (x, y) = trained.diabetes_mlp()
    return model, inputs, x, y, evaluate(model, (x, y), inputs, target="imx93")


def test_digits_rows_and_bounds(digits):
    _, _, x, y, r = digits
    assert r.task == "classification" and r.task_source.startswith("inferred")
    assert [row.name for row in r.rows] == [FLOAT, QUANTIZED, HOST] and r.samples == len(y)
    top1 = {row.name: row.metrics["top-1"] for row in r.rows}
    assert top1[FLOAT] > 0.9  # chance is 0.1
    assert abs(top1[HOST] - top1[QUANTIZED]) <= PTE_VS_QUANTIZED_TOP1
    for row in r.rows:
        assert row.metrics["top-1"] <= row.metrics["top-5"] <= 1.0
    assert "the first 32 sample(s) of the data set" in r.calibration


def test_digits_pte_row_is_an_independent_host_run(digits):
    _, _, x, y, r = digits
    logits = np.stack([run(r.lowering.pte, [torch.from_numpy(s[None].copy())])[0].numpy().ravel() for s in x])
    assert r.row(HOST).metrics["top-1"] == float(np.mean(logits.argmax(1) == y))
    top5 = np.argsort(-logits, axis=1, kind="stable")[:, :5]
    assert r.row(HOST).metrics["top-5"] == float(np.mean([label in best for label, best in zip(y, top5)]))


def test_digits_table_json_and_html(digits, tmp_path):
    r = digits[4]
    text = str(r)
    assert all(name in text for name in (FLOAT, QUANTIZED, HOST, "top-1", "top-5", "task: classification"))
    d = json.loads(json.dumps(r.to_dict()))
    assert [row["name"] for row in d["rows"]] == [FLOAT, QUANTIZED, HOST] and d["columns"] == ["top-1", "top-5"]
    page = r.save_html(tmp_path / "r.html").read_text()
    assert "delegation report" in page and "Accuracy on arrays" in page and "top-1 of the .pte on the host" in page


def test_a_lowering_result_is_evaluated_without_lowering_again(digits):
    _, _, x, y, r = digits
    again = evaluate(data=(x, y), result=r.lowering, limit=40)
    assert [row.name for row in again.rows] == [QUANTIZED, HOST] and again.samples == 40
    assert again.calibration == "as the given LoweringResult was calibrated"
    assert np.array_equal(again.outputs[HOST], r.outputs[HOST][:40])


def _numpy_metrics(p: np.ndarray, t: np.ndarray) -> dict:
    p, t = p.astype(np.float64).ravel(), t.astype(np.float64).ravel()
    e = p - t
    return {"RMSE": math.sqrt(np.mean(e * e)), "MAE": np.mean(np.abs(e)),
            "cosine": np.sum(p * t) / math.sqrt(np.sum(p * p) * np.sum(t * t)),
            "SQNR dB": 10 * math.log10(np.sum(t * t) / np.sum(e * e))}


def test_diabetes_metrics_are_the_numpy_formulas(diabetes):
    model, _, x, y, r = diabetes
    assert r.task == "regression" and "do not index" in r.task_source and r.target == "imx93"
    with torch.no_grad():
        raw = {FLOAT: model(torch.from_numpy(x)).numpy(),
               QUANTIZED: np.stack([r.lowering.quantized_model(torch.from_numpy(s[None].copy())).numpy() for s in x]),
               HOST: np.stack([run(r.lowering.pte, [torch.from_numpy(s[None].copy())])[0].numpy() for s in x])}
    for row in r.rows:
        want = _numpy_metrics(raw[row.name], y)
        assert row.metrics == pytest.approx(want, rel=1e-4), row.name
    assert r.row(FLOAT).metrics["RMSE"] < 0.9 * y.std()  # better than predicting the mean
    assert r.row(HOST).metrics["SQNR dB"] > 6  # vs the targets: the model's error, not quantization's


def test_autoencoder_target_is_its_input():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.ReLU(), torch.nn.Linear(3, 6)).eval()
    x = np.random.default_rng(0).standard_normal((12, 6)).astype(np.float32)
    bars = []

    def progress(*args, **kwargs):  # tqdm, recording each bar: lower()'s, then one per row over the samples
        bars.append(kwargs.get("desc"))
        return tqdm(*args, **kwargs, disable=True)

    r = evaluate(model, (x, x), target="imxrt700", calibration_samples=8, progress=progress)
    assert r.task == "regression" and r.columns == ("RMSE", "MAE", "cosine", "SQNR dB")
    assert r.task_source.startswith("inferred: y holds 6 values per sample")
    assert bars[-3:] == [FLOAT, QUANTIZED, HOST] and "calibrating" in bars
    assert r.row(HOST).metrics == pytest.approx(_numpy_metrics(r.outputs[HOST], x), rel=1e-4)

"""The data set's forms and every bad input as one line naming what is wrong: files (numpy only) and the checks
against the model (one float forward, nothing lowered)."""

import numpy as np
import pytest
import torch

from executorch_neutron.evaluation import evaluate
from executorch_neutron.evaluation.data import load_dataset
from executorch_neutron.models.loading import UserError


def _refused(fn, *args, **kwargs) -> str:
    with pytest.raises(UserError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and info.value.hint and "\n" not in info.value.hint
    return message


@pytest.mark.fast
def test_npz_and_directory_forms(tmp_path):
    x, y = np.arange(24, dtype=np.float32).reshape(3, 2, 4), np.array([2, 0, 1])
    np.savez(tmp_path / "d.npz", x=x, y=y)
    d = load_dataset(tmp_path / "d.npz")
    assert np.array_equal(d.x, x) and np.array_equal(d.y, y) and len(d) == 3
    folder = tmp_path / "samples"
    folder.mkdir()
    for i, s in enumerate(x):
        np.save(folder / f"s{i}.npy", s)
    (folder / "labels.txt").write_text("# file label\n" + "".join(f"s{i}.npy {v}\n" for i, v in enumerate(y)))
    d = load_dataset(folder)
    assert np.array_equal(d.x, x) and np.array_equal(d.y, y) and d.y.dtype == np.int64
    (folder / "labels.txt").unlink()
    np.save(folder / "labels.npy", y.astype(np.float32) / 2)
    assert np.array_equal(load_dataset(folder, limit=2).y, y[:2] / 2)


@pytest.mark.fast
def test_bad_files_are_one_line(tmp_path):
    assert "no such file or directory" in _refused(load_dataset, tmp_path / "nope.npz")
    np.savez(tmp_path / "xz.npz", x=np.zeros((2, 3)), labels=np.zeros(2))
    assert "has no array 'y'" in _refused(load_dataset, tmp_path / "xz.npz")
    np.savez(tmp_path / "n.npz", x=np.zeros((3, 2)), y=np.zeros(2))
    assert "x holds 3 samples but y holds 2 labels" in _refused(load_dataset, tmp_path / "n.npz")
    bad = np.zeros((3, 2))
    bad[1, 0] = np.nan
    np.savez(tmp_path / "nan.npz", x=bad, y=np.zeros(3))
    assert "NaN or Inf values (sample 1)" in _refused(load_dataset, tmp_path / "nan.npz")
    np.save(tmp_path / "a.npy", np.zeros(3))
    assert "an .npz file or a directory" in _refused(load_dataset, tmp_path / "a.npy")
    assert "has no labels.txt or labels.npy" in _refused(load_dataset, tmp_path)
    (tmp_path / "labels.txt").write_text("a.npy 1\n")
    np.save(tmp_path / "b.npy", np.zeros(3))
    assert "no label for 1 sample file(s), e.g. b.npy" in _refused(load_dataset, tmp_path)


@pytest.fixture
def classifier():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 4)).eval()


def test_a_sample_that_does_not_fit_the_model(classifier):
    x = np.zeros((5, 3, 5), np.float32)
    message = _refused(evaluate, classifier, (x, np.zeros(5, int)), (torch.zeros(1, 3, 4),))
    assert "have shape [3, 5] (x is [5, 3, 5]) but the model takes [1, 3, 4]" in message


def test_labels_outside_the_classifier(classifier):
    x, y = np.zeros((5, 3, 4), np.float32), np.array([0, 1, 2, 3, 7])
    message = _refused(evaluate, classifier, (x, y), task="classification")
    assert "label 7 of sample 4 is outside the classifier's 4 outputs (0..3)" in message
    message = _refused(evaluate, classifier, (x, np.full(5, 0.5)), task="classification")
    assert "one whole-number label per sample" in message
    message = _refused(evaluate, classifier, (x, np.zeros((5, 3))), task="regression")
    assert "y holds 3 value(s) per sample but the model's output 0 has 4" in message

"""Small models trained here, in seconds, with fixed seeds, on data sets scikit-learn ships (no download): a CNN on
the 8x8 digits (10 classes) and an MLP regressor on the diabetes set. Shared by tests/evaluation/ and
benchmarks/evaluate.py. Each returns (float model, example inputs, (x_test, y_test)); the digits autoencoder's
y_test is its x_test (reconstruction)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

TEST_SHARE = 0.25


def _split(x: np.ndarray, y: np.ndarray, seed: int):
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(len(x) * (1 - TEST_SHARE))
    return (a.copy() for a in (x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]))  # plain strides


def _fit(model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn, epochs: int, lr: float, batch: int = 64):
    g = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=g).split(batch):
            opt.zero_grad()
            loss_fn(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def _digits():
    """load_digits' images (pixels 0..16 scaled to 0..1) as (N, 1, 8, 8), split; labels 0..9."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return _split(x, d.target.astype(np.int64), seed=0)


def digits_cnn(epochs: int = 12):
    """A CNN on the digits: conv-relu, strided conv-relu, linear to 10 classes."""
    torch.manual_seed(0)
    x_train, y_train, x_test, y_test = _digits()
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2, padding=1),
                          nn.ReLU(), nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    _fit(model, torch.from_numpy(x_train), torch.from_numpy(y_train), nn.functional.cross_entropy, epochs, 1e-2)
    return model, (torch.from_numpy(x_test[:1]),), (x_test, y_test)


class _Unscale(nn.Module):
    """y * std + mean: the regressor answers in the data set's own units."""

    def __init__(self, mean: float, std: float):
        super().__init__()
        self.mean, self.std = mean, std

    def forward(self, y):
        return y * self.std + self.mean


def diabetes_mlp(epochs: int = 20):
    """An MLP on load_diabetes (10 standardized features; the target, disease progression 25..346, learned
    standardized and answered in its own units)."""
    from sklearn.datasets import load_diabetes

    torch.manual_seed(0)
    d = load_diabetes()
    x = ((d.data - d.data.mean(0)) / d.data.std(0)).astype(np.float32)
    y = d.target.astype(np.float32)
    x_train, y_train, x_test, y_test = _split(x, y, seed=0)
    mean, std = float(y_train.mean()), float(y_train.std())
    net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    _fit(net, torch.from_numpy(x_train), torch.from_numpy((y_train[:, None] - mean) / std), nn.functional.mse_loss,
         epochs, 3e-3, batch=32)
    return nn.Sequential(net, _Unscale(mean, std)).eval(), (torch.from_numpy(x_test[:1]),), (x_test, y_test)


def digits_autoencoder(epochs: int = 30):
    """An MLP autoencoder of the digits: 64 pixels -> 16 -> 64, sigmoid output; trained to reconstruct its input."""
    torch.manual_seed(0)
    x_train, _, x_test, _ = _digits()
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 64),
                          nn.Sigmoid(), nn.Unflatten(1, (1, 8, 8)))
    x = torch.from_numpy(x_train)
    _fit(model, x, x, nn.functional.mse_loss, epochs, 1e-2)
    return model, (torch.from_numpy(x_test[:1]),), (x_test, x_test)

"""Recurrent layers and whole recurrent models built from blocks (no downloads), for tests/models/test_rnn.py and
benchmarks/rnn.py.

`LAYERS`: nn.LSTM / nn.GRU / nn.RNN alone, name -> () -> (module, example inputs): 1 and 2 layers, batch_first
either way, with and without bias, returning the hidden states, bidirectional, initial states given, batch 1 (what
an MCU runs) and batch 2; the single-step cells (nn.LSTMCell, nn.GRUCell, nn.RNNCell) with the state as input and
output. Hidden size 16 and input size 8, multiples of Neutron's 8 MACs.
`MODELS`: a CRNN keyword spotter (conv front end + GRU + linear on a 1x49x10 MFCC) and an LSTM autoencoder for
sensor anomaly detection (20 steps of 8 features).
"""

from __future__ import annotations

import torch
from torch import nn


class Recurrent(nn.Module):
    """A recurrent layer applied to x (and the initial states, when given); returns the output sequence, or with
    `states` also h_n (and c_n)."""

    def __init__(self, rnn: nn.Module, states: bool = False):
        super().__init__()
        self.rnn, self.states = rnn, states

    def forward(self, x, *hx):
        out, hn = self.rnn(x, (hx[0] if len(hx) == 1 else tuple(hx))) if hx else self.rnn(x)
        if not self.states:
            return out
        return (out,) + (tuple(hn) if isinstance(hn, tuple) else (hn,))


def _layer(cls, batch_first=True, batch=1, steps=5, layers=1, bias=True, bidirectional=False, states=False,
           initial=False, **kw):
    torch.manual_seed(0)
    rnn = cls(8, 16, num_layers=layers, batch_first=batch_first, bias=bias, bidirectional=bidirectional, **kw)
    x = torch.randn(batch, steps, 8) if batch_first else torch.randn(steps, batch, 8)
    n = layers * (2 if bidirectional else 1)
    hx = ()
    if initial:
        hx = (0.5 * torch.randn(n, batch, 16),) + ((0.5 * torch.randn(n, batch, 16),) if cls is nn.LSTM else ())
    return Recurrent(rnn, states).eval(), (x,) + hx


class Step(nn.Module):
    """One step of a cell (nn.LSTMCell / GRUCell / RNNCell), as a streaming model runs it once per frame: the
    state comes in and goes out (or starts at zero when not given)."""

    def __init__(self, cell: nn.Module):
        super().__init__()
        self.cell = cell

    def forward(self, x, *state):
        out = self.cell(x, (state[0] if len(state) == 1 else tuple(state))) if state else self.cell(x)
        return tuple(out) if isinstance(out, tuple) else out


def _cell(cls, batch=1, state=True, **kw):
    torch.manual_seed(0)
    cell = cls(8, 16, **kw)
    x = torch.randn(batch, 8)
    states = 2 if cls is nn.LSTMCell else 1
    return Step(cell).eval(), (x,) + ((tuple(0.5 * torch.randn(batch, 16) for _ in range(states))) if state else ())


LAYERS = {
    "lstm": lambda: _layer(nn.LSTM),
    "lstm_time_first_no_bias": lambda: _layer(nn.LSTM, batch_first=False, bias=False),
    "lstm_2_layers_states": lambda: _layer(nn.LSTM, layers=2, states=True),
    "lstm_bidirectional": lambda: _layer(nn.LSTM, bidirectional=True),
    "lstm_2_layers_bidirectional_batch2": lambda: _layer(nn.LSTM, layers=2, bidirectional=True, batch=2,
                                                         states=True),
    "lstm_initial_states": lambda: _layer(nn.LSTM, initial=True, states=True),
    "gru": lambda: _layer(nn.GRU),
    "gru_time_first_no_bias": lambda: _layer(nn.GRU, batch_first=False, bias=False),
    "gru_2_layers_bidirectional_states": lambda: _layer(nn.GRU, layers=2, bidirectional=True, states=True),
    "gru_initial_state": lambda: _layer(nn.GRU, initial=True, states=True),
    "rnn_tanh": lambda: _layer(nn.RNN),
    "rnn_relu_2_layers": lambda: _layer(nn.RNN, nonlinearity="relu", layers=2),
    "lstm_cell_step": lambda: _cell(nn.LSTMCell),
    "gru_cell_step": lambda: _cell(nn.GRUCell),
    "gru_cell_zero_state_no_bias": lambda: _cell(nn.GRUCell, state=False, bias=False),
    "rnn_cell_step_batch2": lambda: _cell(nn.RNNCell, batch=2),
}


class CRNNKeywordSpotter(nn.Module):
    """Conv front end on a 49x10 MFCC (two strided 3x3 convs + BN + ReLU) -> 13 steps of 16 x 5 features ->
    GRU(80, 32) -> the last hidden state -> linear to 12 keywords."""

    def __init__(self, classes: int = 12):
        super().__init__()
        self.front = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=(2, 1), padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.gru = nn.GRU(80, 32, batch_first=True)
        self.head = nn.Linear(32, classes)

    def forward(self, mfcc):  # [B, 1, 49, 10]
        f = self.front(mfcc)  # [B, 16, 13, 5]
        seq = f.permute(0, 2, 1, 3).reshape(f.shape[0], f.shape[2], -1)  # [B, 13, 80]
        _, h = self.gru(seq)
        return self.head(h[-1])


class LSTMAutoencoder(nn.Module):
    """Encoder LSTM(8, 16) -> the last hidden state repeated over time -> decoder LSTM(16, 16) -> linear back to 8
    features per step (the reconstruction whose error flags an anomaly)."""

    def __init__(self, features: int = 8, hidden: int = 16):
        super().__init__()
        self.encoder = nn.LSTM(features, hidden, batch_first=True)
        self.decoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, features)

    def forward(self, x):  # [B, T, features]
        _, (h, _) = self.encoder(x)
        z = h[-1].unsqueeze(1).expand(-1, x.shape[1], -1)
        y, _ = self.decoder(z)
        return self.out(y)


def _crnn():
    torch.manual_seed(0)
    model = CRNNKeywordSpotter().eval()
    for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):  # trained-looking statistics
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
    return model, (torch.randn(1, 1, 49, 10),)


def _autoencoder():
    torch.manual_seed(0)
    return LSTMAutoencoder().eval(), (torch.randn(1, 20, 8),)


MODELS = {"crnn_kws": _crnn, "lstm_autoencoder": _autoencoder}

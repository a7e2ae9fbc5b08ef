"""Recurrent networks on the NPU (tests/models/rnn_blocks.py): nn.LSTM / nn.GRU / nn.RNN unrolled into int8 gates
(passes/rnn_unroll.py) lower whole into one partition, on Neutron (imxrt700, imxrt700cm) and Ethos-U (imx93).

References: the float model for the rewrite itself (it must compute what the recurrent op computes), PyTorch's
quantized model (convert_pt2e) for the .pte run on ExecuTorch's runtime with the host back ends.

Bounds. A single layer: at most 2 output steps, at least 95% of outputs within 1 step. Every TFLite op matches its
quantized PyTorch op within one step of its own output (LiteRT's int8 sigmoid and tanh are fixed-point
approximations that round differently from PyTorch's float-then-round), but in a recurrence a one-step
difference in a state (h or c) at step t is an input of every gate at step t + 1, so it can show as one more step
in the next hidden state; over the 5 steps here it never exceeds 2. Whole models (13 GRU steps behind two convs;
20 encoder + 20 decoder LSTM steps): at most 3 steps, 95% within 1, as tests/models/test_arch_families.py, and
SQNR vs the float model at most 1 dB below PyTorch's quantized model.
"""

import numpy as np
import pytest
import torch

from executorch_neutron import lower
from executorch_neutron.numerics import sqnr
from executorch_neutron.passes.fold_constants import fold_constants
from executorch_neutron.passes.rnn_unroll import rnn_unroll
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration
from harness import model_output_qparams, quantize_np, steps
from models import rnn_blocks

A = torch.ops.aten
RECURRENT = {A.lstm.input, A.gru.input, A.rnn_tanh.input, A.rnn_relu.input, A.lstm_cell.default, A.gru_cell.default,
             A.rnn_tanh_cell.default, A.rnn_relu_cell.default}
#: the layer cases also lowered for Ethos-U (each case costs a full lower)
ETHOS_U_LAYERS = ("lstm_2_layers_states", "lstm_initial_states", "gru_2_layers_bidirectional_states",
                  "rnn_relu_2_layers", "gru_cell_step")


def _flat(out) -> list[torch.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name", rnn_blocks.LAYERS)
def test_unrolled_graph_computes_the_recurrent_op(name):
    model, inputs = rnn_blocks.LAYERS[name]()
    gm = _unrolled(model, inputs)
    assert not any(n.target in RECURRENT for n in gm.graph.nodes), gm.graph
    with torch.no_grad():
        for got, want in zip(_flat(gm(*inputs)), _flat(model(*inputs)), strict=True):
            assert got.shape == want.shape
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def _unrolled(model, inputs, with_sub=True):
    return rnn_unroll(fold_constants(torch.export.export(model, inputs, strict=False).module()), with_sub=with_sub)


@pytest.mark.fast
@pytest.mark.parametrize("name", [n for n in rnn_blocks.LAYERS if n.startswith("gru")])
def test_gru_without_sub_computes_the_recurrent_op(name):
    """For an operator table without SUB (Neutron's documented one) the GRU's h - n is h + neg(n): no sub left,
    the same values."""
    model, inputs = rnn_blocks.LAYERS[name]()
    gm = _unrolled(model, inputs, with_sub=False)
    assert not any(n.target == torch.ops.aten.sub.Tensor for n in gm.graph.nodes), gm.graph
    with torch.no_grad():
        for got, want in zip(_flat(gm(*inputs)), _flat(model(*inputs)), strict=True):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_repeated_step_input_is_projected_once():
    """The autoencoder's decoder reads one latent vector at every step: its 4 input-side gate layers are made once,
    the recurrent ones once per step after the first (zero initial state). The encoder's forget gate is not
    computed at its first step (it multiplies a zero cell state)."""
    model, inputs = rnn_blocks.MODELS["lstm_autoencoder"]()
    steps_ = inputs[0].shape[1]
    linears = sum(n.target == torch.ops.aten.linear.default for n in _unrolled(model, inputs).graph.nodes)
    encoder, decoder = 4 * steps_ - 1 + 4 * (steps_ - 1), 4 + 4 * (steps_ - 1)
    assert linears == encoder + decoder + 1  # + the output layer


@pytest.mark.fast
def test_lstm_with_projections_is_left_alone():
    """proj_size adds a projection of h per layer, which the unrolled cell does not compute: the op stays whole."""
    model = rnn_blocks.Recurrent(torch.nn.LSTM(8, 16, proj_size=8, batch_first=True)).eval()
    gm = _unrolled(model, (torch.randn(1, 4, 8),))
    assert any(n.target == torch.ops.aten.lstm.input for n in gm.graph.nodes)


def _pte_vs_quantized(result, model, samples):
    """(max steps over every output, share within 1 step, SQNR of the .pte vs float, of PyTorch's quantized model
    vs float) over `samples`; SQNR on the first output."""
    qparams = model_output_qparams(result.quantized_model)
    diffs, ours, ref, flt = [], [], [], []
    with torch.no_grad():
        for x in samples:
            got, want = _flat(run(result.pte, x)), _flat(result.quantized_model(*x))
            diffs += [steps(quantize_np(g.numpy(), *q), quantize_np(w.numpy(), *q)).ravel()
                      for g, w, q in zip(got, want, qparams, strict=True)]
            ours.append(got[0].numpy())
            ref.append(want[0].numpy())
            flt.append(_flat(model(*x))[0].numpy())
    d = np.concatenate(diffs)
    return int(d.max()), float((d <= 1).mean()), sqnr(np.stack(flt), np.stack(ours)), sqnr(np.stack(flt), np.stack(ref))


def _lower(model, inputs, target):
    calib = [inputs] + calibration(inputs, 6)
    return lower(model, inputs, calib, target=target), calib


def _assert_whole(result):
    report = result.report
    assert len(report.partitions) == 1 and report.rejections == [], str(report)  # every compute node delegated


@pytest.mark.parametrize("target, name", [("imxrt700", n) for n in rnn_blocks.LAYERS]
                         + [("imx93", n) for n in ETHOS_U_LAYERS])
def test_recurrent_layer_on_the_npu(target, name):
    model, inputs = rnn_blocks.LAYERS[name]()
    result, calib = _lower(model, inputs, target)
    _assert_whole(result)
    worst, within1, _, _ = _pte_vs_quantized(result, model, calib[:4])
    print(f"{name} on {target}: max {worst} steps, {100 * within1:.1f}% within 1 step")
    assert worst <= 2 and within1 >= 0.95, f"max {worst} steps, {within1:.3f} within 1 step"


@pytest.mark.parametrize("name", ["gru_initial_state", "gru_cell_zero_state_no_bias"])
def test_gru_whole_under_the_documented_table(name):
    """The documented table has no SUB: the GRU's update is written with neg + add and stays one partition."""
    model, inputs = rnn_blocks.LAYERS[name]()
    calib = [inputs] + calibration(inputs, 6)
    result = lower(model, inputs, calib, target="imxrt700", constraints="documented")
    _assert_whole(result)
    worst, within1, _, _ = _pte_vs_quantized(result, model, calib[:4])
    assert worst <= 2 and within1 >= 0.95, f"max {worst} steps, {within1:.3f} within 1 step"


@pytest.mark.parametrize("target, name", [("imxrt700", "crnn_kws"), ("imxrt700", "lstm_autoencoder"),
                                          ("imx93", "crnn_kws"), ("imx93", "lstm_autoencoder"),
                                          ("imxrt700cm", "crnn_kws")])
def test_recurrent_model_on_the_npu(target, name):
    model, inputs = rnn_blocks.MODELS[name]()
    result, calib = _lower(model, inputs, target)
    _assert_whole(result)
    worst, within1, ours_db, ref_db = _pte_vs_quantized(result, model, calib[1:5])
    print(f"{name} on {target}: max {worst} steps, {100 * within1:.1f}% within 1 step; SQNR vs float "
          f"{ours_db:.1f} dB (quantized PyTorch {ref_db:.1f} dB)")
    assert worst <= 3 and within1 >= 0.95, f"max {worst} steps, {within1:.3f} within 1 step"
    assert ours_db >= ref_db - 1.0, f"SQNR {ours_db:.1f} dB vs quantized PyTorch {ref_db:.1f} dB"

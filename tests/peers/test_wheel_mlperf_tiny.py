"""The MLPerf Tiny models the executorch wheel ships (`executorch.examples.models.mlperf_tiny`), taken as a user takes
them (imported, not rewritten): random weights, batch-norm statistics warmed on 4 random batches of 8 in train mode,
4 random calibration samples. Per model and target: one partition, nothing on the CPU, and the .pte's SQNR against
the float model within 1 dB of PyTorch's quantized model's (convert_pt2e, the reference), over 3 seeds for
MobileNetV1-0.25.

MobileNetV1-0.25 was 3.3 dB below the reference on one of these seeds (seed 2, imxrt700): its global average pool
was LiteRT's int8 MEAN, which rounds twice and missed PyTorch's mean by a step on 13 % of its 256 outputs, and the
2-class classifier summed those steps into its logits (ops/pooling.py now writes every spatial mean as a depthwise
convolution). The largest difference from the reference is bounded at 2 output steps: one for the last
requantization, one for the drift that 28 layers of one-step differences leave in a 256-input classifier whose
output scale is the quantizer's floor (2**-12: the logits of warmed random weights span a few hundredths).

On seed 0 the .pte stays 1.1 dB short of the reference (47.74 dB vs float against 48.85, both targets), and that is
the device's arithmetic, not the converter's: every weight, bias and scale of the TFLite equals the quantized
model's, and fed the same int8 inputs each layer of LiteRT's reference kernels lands one step above PyTorch on
0.02-0.2 % of its outputs (1.6 % on the depthwise convolution of the sixth 128-channel block; none on the mean and
the classifier), never below. Their int8 requantization rounds twice: a rounding doubling high multiply by the
31-bit multiplier leaves the accumulator on a grid of 2**-r output steps (r, the right shift, is 7 to 9 here),
then a rounding shift rounds again, so a value up to 2**-(r+1) step below a half goes up; PyTorch's quantized
model rounds once. The NPUs follow the reference kernels (Vela compiles int8 convolutions in the Ethos-U's
TensorFlow Lite rounding mode). With 28 layers of such steps in front of a 2-class classifier whose error against
float is itself about one step, the output moves by one step here and there, and the SQNR with it: it costs 1.1
dB on seed 0 and gains 0.6 and 9.9 dB on seeds 1 and 2 (48.36 vs 47.81, 56.68 vs 46.83). The test shows it on the
three seeds: the same TFLite requantizing once, in LiteRT's XNNPACK kernels (a float32 scale, one rounding),
reaches PyTorch's figure (measured: its output is the quantized model's bit for bit), while the .pte, LiteRT's
reference kernels, misses it by more than 1 dB on seed 0 (`ROUNDING_TWICE_SHORT`), and `compare` names the
double rounding there."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import torch

from executorch_neutron import lower
from executorch_neutron.backends import host_payload
from executorch_neutron.core.exported import lowered_modules
from executorch_neutron.numerics import compare, sqnr
from executorch_neutron.runtime import executor, run
from harness import model_output_qparams

mlperf_tiny = pytest.importorskip("executorch.examples.models.mlperf_tiny")

TARGETS = ("imxrt700", "imx93")
MODELS = {  # name -> (class in the wheel, input shape)
    "mobilenet_v1_025": ("MobileNetV1025", (1, 3, 96, 96)),
    "resnet8": ("ResNet8", (1, 3, 32, 32)),
    "ds_cnn": ("DSCNNKWS", (1, 1, 49, 10)),
    "deep_autoencoder": ("DeepAutoEncoder", (1, 640)),
}
CASES = [("mobilenet_v1_025", seed) for seed in (0, 1, 2)] + [(name, 0) for name in MODELS if name != "mobilenet_v1_025"]
#: where the .pte is more than 1 dB short of the reference because LiteRT's reference kernels (the NPU's arithmetic)
#: round each requantization twice (see the module docstring); the same TFLite requantizing once reaches it
ROUNDING_TWICE_SHORT = {("mobilenet_v1_025", 0)}


def wheel_model(name: str, seed: int):
    """The wheel's model `name`, batch norms warmed in train mode on 4 random batches of 8, then in eval mode;
    returns (model, example inputs, 4 calibration samples, 8 evaluation samples)."""
    cls, shape = MODELS[name]
    torch.manual_seed(seed)
    model = getattr(mlperf_tiny, cls)().train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, *shape[1:]))
    model.eval()
    inputs = (torch.randn(shape),)
    return model, inputs, [(torch.randn(shape),) for _ in range(4)], [(torch.randn(shape),) for _ in range(8)]


def rounding_once(r, x: torch.Tensor) -> np.ndarray:
    """The .pte's TFLite on sample x requantizing once (LiteRT's XNNPACK kernels; the .pte runs its reference
    kernels): x quantized as the quantized model quantizes it, the output dequantized as it dequantizes its own.
    One partition, nothing on the CPU."""
    (module,) = lowered_modules(r.edge_program.exported_program().graph_module).values()
    q = next(n for n in r.quantized_model.graph.nodes if "quantize_per_tensor" in str(n.target))
    xq = torch.ops.quantized_decomposed.quantize_per_tensor.default(x, q.args[1], q.args[2], -128, 127, torch.int8)
    (out,) = executor.run_reference_payload(host_payload(module), [xq.numpy()], rounding_once=True)
    (scale, zero_point), = model_output_qparams(r.quantized_model)
    return (out.astype(np.float64) - zero_point) * scale


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name,seed", CASES, ids=[f"{n}-seed{s}" for n, s in CASES])
def test_the_pte_is_within_1_db_of_pytorchs_quantized_model(name, seed, target):
    model, inputs, calibration, samples = wheel_model(name, seed)
    with contextlib.redirect_stdout(io.StringIO()):  # Vela prints its summary
        r = lower(model, inputs, calibration, target=target)
    assert [(j.op, j.reason) for j in r.report.rejections] == []
    assert len(r.report.partitions) == 1
    (scale, _), = model_output_qparams(r.quantized_model)
    with torch.no_grad():
        f, q, p = (np.concatenate([fn(x) for x in samples]).astype(np.float64) for fn in (
            lambda x: model(*x).numpy(), lambda x: r.quantized_model(*x).numpy(), lambda x: run(r.pte, x)[0].numpy()))
    pte_db, reference_db = sqnr(f, p), sqnr(f, q)
    assert np.abs(p - q).max() / scale <= 2 + 1e-6
    if name == "mobilenet_v1_025":  # the same TFLite requantizing once, as PyTorch does, reaches its figure
        once = np.concatenate([rounding_once(r, *x) for x in samples])
        assert np.abs(once - q).max() / scale <= 1 + 1e-6
        assert sqnr(f, once) >= reference_db - 1.0, f"rounding once {sqnr(f, once):.2f} dB, PyTorch {reference_db:.2f}"
    if (name, seed) in ROUNDING_TWICE_SHORT:  # LiteRT's reference kernels, rounding twice, do not; compare says why
        assert pte_db < reference_db - 1.0, (f".pte {pte_db:.2f} dB vs float, PyTorch's quantized model "
                                             f"{reference_db:.2f}: within 1 dB now, drop it from ROUNDING_TWICE_SHORT")
        (partition,) = compare(model, result=r, samples=samples).partitions
        assert partition.double_rounding and partition.once_max_steps == 0, partition
    else:
        assert pte_db >= reference_db - 1.0, (f".pte {pte_db:.2f} dB vs float, PyTorch's quantized model "
                                              f"{reference_db:.2f}")

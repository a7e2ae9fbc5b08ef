"""Transformer blocks and small transformer models (tests/models/transformer_blocks.py) run fully on the NPU under
`sdk-current`: one partition, no compute node on the CPU, the .pte close to PyTorch's quantized model.

Blocks: LiteRT running the partition's TFLite vs PyTorch's quantized model (`lower_and_run`). Bound: 1 step for a
single op (GELU's pieces end in one multiplication whose inputs are exact copies of the reference's), 2 steps for
attention and for blocks around it (as tests/passes/test_attention_block.py: a one-step difference in the softmax
probabilities, scale 1/256, moves the second bmm's result by up to one step), 3 for layer norm: LiteRT's int8
RSQRT and PyTorch's float rsqrt + rounding may differ by one step of the per-row factor 1/sqrt(var + eps), which
moves every value of that row by |x - mean| * s_factor / s_out steps (up to about 2 here) before the last op's own
step.
Whole models: the .pte on ExecuTorch's runtime + host NeutronBackend, over 4 calibration samples. An element-wise
step bound does not hold for them: layer norm is computed from int8 pieces, and a one-step difference of a row's
mean (LiteRT's int8 MEAN vs PyTorch's float mean + rounding) is amplified downstream: measured on the layer_norm
block with numerics.compare, 1 step at the mean becomes 2 at x - mean, 7 at (x - mean)^2 and 10 at rsqrt; over
2-3 normalizations per encoder layer the outputs differ by up to 8 steps (kwt: 12 logits, mean 2 steps). The
bound is on the whole output instead: SQNR of the .pte against PyTorch's quantized model at least 25 dB (measured:
kwt 26.6, tiny_vit 31.5, mobilevit_block 36.3 dB), and SQNR of the .pte vs the float model at most 1 dB below
PyTorch's quantized model's (measured: 28.6 / 28.8, 34.7 / 31.9, 34.7 / 34.7 dB): the difference is rounding noise
of the same size as quantization's own, not an error of a converted op.
"""

import pytest

from models.transformer_blocks import BLOCKS, MODELS
from executorch_neutron.models.zoo import calibration
from harness import assert_within_steps, compare_pte, lower_and_run

BLOCK_STEPS = {"layer_norm": 3, "gelu_tanh": 1, "gelu_exact": 1, "mlp": 1, "attention_matmul": 2, "mha_matmul": 2,
               "mha_module": 2, "attention_sdpa": 2, "encoder_layer": 2}


AGREEMENT_DB = 25.0  # .pte vs PyTorch's quantized model, whole models (see the module docstring)


def _check_all_on_npu(r):
    report = r.result.report
    assert len(report.partitions) == 1, str(report)
    assert report.rejections == [], str(report)


@pytest.mark.parametrize("name", BLOCKS)
def test_block_runs_on_the_npu_in_one_partition(name):
    model, inputs = BLOCKS[name]()
    r = lower_and_run(model, inputs, [inputs] + calibration(inputs, 4), constraints="sdk-current")
    _check_all_on_npu(r)
    assert_within_steps(r.output, r.reference, BLOCK_STEPS[name], r.output_scale)


@pytest.mark.parametrize("name", MODELS)
def test_small_transformer_runs_on_the_npu(name):
    model, inputs = MODELS[name]()
    calib = [inputs] + calibration(inputs, 8)
    r = lower_and_run(model, inputs, calib, constraints="sdk-current")
    _check_all_on_npu(r)
    c = compare_pte(r, model, calib[1:5])
    print(f"{name}: max {int(c.steps.max())} steps, mean {c.steps.mean():.2f}; SQNR vs float {c.sqnr_db:.1f} dB "
          f"(quantized PyTorch {c.quantized_sqnr_db:.1f} dB); .pte vs quantized PyTorch {c.agreement_db:.1f} dB")
    assert c.agreement_db >= AGREEMENT_DB, f"{c.agreement_db:.1f} dB vs quantized PyTorch (max {c.steps.max()} steps)"
    assert c.sqnr_db >= c.quantized_sqnr_db - 1.0, (
        f"SQNR {c.sqnr_db:.1f} dB vs quantized PyTorch {c.quantized_sqnr_db:.1f} dB")

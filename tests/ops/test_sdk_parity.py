"""Operators and operand shapes NXP's current release (the NXP backend of the executorch 1.5.1 wheel) delegates, and
so must the default profile `sdk-current`: each case lowered to one partition and its TFLite in LiteRT within 1
output quantization step of PyTorch's quantized model (convert_pt2e). Then the cases NXP's release refuses too,
with our reason, and the documented profile's refusals of the relaxed cases."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness import Fn, Param, assert_within_steps, lower_and_run
from executorch_neutron import lower


def f(fn, *mods):
    return lambda: Fn(fn, *mods)


def randn(*shapes):
    return lambda g: tuple(torch.randn(*s, generator=g) for s in shapes)


def positive(*shapes):
    """Inputs in (0.05, 3.05): the domain of rsqrt and log."""
    return lambda g: tuple(torch.rand(*s, generator=g) * 3 + 0.05 for s in shapes)


#: the batch dim added around a pool of an unbatched input, in the same partition
BATCHED = {"aten.unsqueeze_copy.default": 1, "aten.squeeze_copy.dims": 1}

# name: (model factory, input maker (generator -> inputs), delegated ops)
CASES = {
    # broadcasting: one operand has the output's element count (NodeConverter.inputs_satisfy_broadcast_condition)
    "add_nc11": (f(lambda s, a, b: a + b), randn((1, 16, 8, 8), (1, 16, 1, 1)), {"aten.add.Tensor": 1}),
    "add_11hw_first": (f(lambda s, a, b: a + b), randn((1, 1, 5, 7), (1, 8, 5, 7)), {"aten.add.Tensor": 1}),
    "add_rank1_last": (f(lambda s, a, b: a + b), randn((1, 8, 32), (32,)), {"aten.add.Tensor": 1}),
    "add_rank1_w_of_rank4": (f(lambda s, a, b: a + b), randn((1, 8, 5, 7), (7,)), {"aten.add.Tensor": 1}),
    "add_param_32": (lambda: Param(torch.add, 32), randn((1, 6, 32)), {"aten.add.Tensor": 1}),
    "add_scalar": (f(lambda s, a: a + 1.0), randn((1, 8, 5, 6)), {"aten.add.Tensor": 1}),
    "sub_t1": (f(lambda s, a, b: a - b), randn((1, 6, 32), (1, 6, 1)), {"aten.sub.Tensor": 1}),
    "sub_scalar_first": (f(lambda s, a: 2.0 - a), randn((1, 12, 3, 5)), {"aten.sub.Tensor": 1}),
    "sub_rank2_of_rank3": (f(lambda s, a, b: a - b), randn((2, 5, 24), (5, 24)), {"aten.sub.Tensor": 1}),
    "mul_param_32": (lambda: Param(torch.mul, 32), randn((1, 6, 32)), {"aten.mul.Tensor": 1}),
    "mul_rank3_by_rank4": (f(lambda s, a, b: a * b), randn((3, 5, 7), (1, 4, 3, 5, 7)[1:]), {"aten.mul.Tensor": 1}),
    "mul_n1hw": (f(lambda s, a, b: a * b), randn((1, 16, 6, 9), (1, 1, 6, 9)), {"aten.mul.Tensor": 1}),
    "mul_both_broadcast_equal_rank": (f(lambda s, a, b: a * b), randn((1, 8, 1, 5), (1, 1, 6, 1)),
                                      {"aten.mul.Tensor": 1}),  # beyond NXP: equal ranks broadcast freely
    # maximum / minimum (maximum_converter.py, minimum_converter.py): operands and output share qparams
    "maximum": (f(lambda s, a, b: torch.maximum(a, b)), randn((1, 8, 5, 6), (1, 8, 5, 6)),
                {"aten.maximum.default": 1}),
    "maximum_nc11": (f(lambda s, a, b: torch.maximum(a, b)), randn((1, 16, 3, 7), (1, 16, 1, 1)),
                     {"aten.maximum.default": 1}),
    "minimum_2d": (f(lambda s, a, b: torch.minimum(a, b)), randn((2, 24), (2, 24)), {"aten.minimum.default": 1}),
    "minimum_rank1": (f(lambda s, a, b: torch.minimum(a, b)), randn((1, 5, 40), (40,)), {"aten.minimum.default": 1}),
    # unary math (rsqrt_converter.py, exp_converter.py, log_converter.py)
    "rsqrt": (f(lambda s, a: torch.rsqrt(a)), positive((1, 8, 5, 6)), {"aten.rsqrt.default": 1}),
    "rsqrt_t1": (f(lambda s, a: torch.rsqrt(a)), positive((1, 6, 1)), {"aten.rsqrt.default": 1}),
    "exp": (f(lambda s, a: torch.exp(a)), randn((1, 6, 32)), {"aten.exp.default": 1}),
    "log": (f(lambda s, a: torch.log(a)), positive((3, 24)), {"aten.log.default": 1}),
    # reductions (mean_dim_converter.py, sum_dim_int_list_converter.py)
    "mean_last_keepdim": (f(lambda s, a: a.mean(-1, keepdim=True)), randn((1, 6, 32)), None),
    "mean_last": (f(lambda s, a: a.mean(-1)), randn((1, 5, 24)), None),
    "sum_last_keepdim": (f(lambda s, a: a.sum(-1, keepdim=True)), randn((1, 6, 32)), {"aten.sum.dim_IntList": 1}),
    "sum_channels": (f(lambda s, a: a.sum(1)), randn((1, 8, 5, 6)), {"aten.sum.dim_IntList": 1}),
    "sum_hw_keepdim": (f(lambda s, a: a.sum((2, 3), keepdim=True)), randn((1, 16, 3, 7)), {"aten.sum.dim_IntList": 1}),
    # softmax over the last dim of a rank-4 tensor (softmax_converter.py: a node that is not channels-first)
    "softmax4_last": (lambda: nn.Softmax(-1), randn((1, 2, 8, 16)), {"aten._softmax.default": 1}),
    "softmax_rank1": (lambda: nn.Softmax(0), randn((24,)), {"aten._softmax.default": 1}),
    "softmax_rank1_40": (f(lambda s, a: torch.softmax(a, -1)), randn((40,)), {"aten._softmax.default": 1}),
    "softmax4_last_attention": (lambda: nn.Softmax(3), randn((2, 3, 5, 24)), {"aten._softmax.default": 1}),
    # pooling (max_pool2d_with_indices_converter.py: strides to 4096, any batch; avg_pool_2d_converter.py:
    # padding counted in the average)
    "max_pool_k3_s3": (lambda: nn.MaxPool2d(3, 3), randn((1, 8, 9, 12)), {"aten.max_pool2d_with_indices.default": 1}),
    "max_pool_batch2": (lambda: nn.MaxPool2d(2), randn((2, 8, 8, 10)), {"aten.max_pool2d_with_indices.default": 1}),
    "avg_pool_k3_s1_p1_include_pad": (lambda: nn.AvgPool2d(3, 1, 1), randn((1, 8, 7, 9)),
                                      {"aten.avg_pool2d.default": 1}),
    "avg_pool_k3_s2_p1_include_pad": (lambda: nn.AvgPool2d(3, 2, 1), randn((1, 16, 10, 7)),
                                      {"aten.avg_pool2d.default": 1}),
    # an unbatched (C, H, W) input (NXP: aten_passes/add_batch_size_for_3d_input_pool_2d_ops.py; ours:
    # passes/pool1d_to_pool2d.py adds the batch dim before quantization)
    "max_pool_rank3": (lambda: nn.MaxPool2d(2), randn((8, 8, 10)),
                       {"aten.max_pool2d_with_indices.default": 1, **BATCHED}),
    "max_pool_rank3_k3_s2_p1": (lambda: nn.MaxPool2d(3, 2, 1), randn((6, 9, 11)),
                                {"aten.max_pool2d_with_indices.default": 1, **BATCHED}),
    "avg_pool_rank3": (lambda: nn.AvgPool2d(2), randn((8, 6, 8)), {"aten.avg_pool2d.default": 1, **BATCHED}),
    "avg_pool_rank3_k3_s2_p1": (lambda: nn.AvgPool2d(3, 2, 1), randn((5, 7, 9)),
                                {"aten.avg_pool2d.default": 1, **BATCHED}),
    "adaptive_2x3_rank3": (lambda: nn.AdaptiveAvgPool2d((2, 3)), randn((4, 6, 9)),
                           {"aten._adaptive_avg_pool2d.default": 1, **BATCHED}),
    # constant padding of the channels (constant_pad_nd_converter.py: any dims)
    "pad_channels": (f(lambda s, a: F.pad(a, (0, 0, 0, 0, 1, 2))), randn((1, 8, 4, 6)),
                     {"aten.constant_pad_nd.default": 1}),
    "pad_channels_and_w_rank3": (f(lambda s, a: F.pad(a, (1, 2, 3, 0))), randn((1, 5, 12)),
                                 {"aten.constant_pad_nd.default": 1}),
    # reflection padding (pad_converter.py: mode reflect; NXP needs preserve_ops=[aten.pad.default], we keep
    # aten.pad from decomposition when the NPU takes it)
    "pad_reflect_hw": (f(lambda s, a: F.pad(a, (1, 1, 2, 2), mode="reflect")), randn((1, 8, 5, 6)),
                       {"aten.pad.default": 1}),
    "pad_reflect_rank3": (f(lambda s, a: F.pad(a, (1, 2), mode="reflect")), randn((1, 16, 10)),
                          {"aten.pad.default": 1}),
    # prelu (prelu_converter.py: no channel or size rule; rank 3 with one slope)
    "prelu_6_channels": (lambda: nn.PReLU(6, 0.1), randn((1, 6, 4, 5)), {"aten.prelu.default": 1}),
    "prelu_rows_5120": (lambda: nn.PReLU(8, 0.1), randn((1, 8, 80, 64)), {"aten.prelu.default": 1}),
    "prelu_rank3_shared": (lambda: nn.PReLU(1, 0.2), randn((1, 8, 20)), {"aten.prelu.default": 1}),
    "prelu_rank3_channels": (lambda: nn.PReLU(8, 0.2), randn((2, 8, 11)), {"aten.prelu.default": 1}),
    "prelu_rank2": (lambda: nn.PReLU(16, 0.2), randn((3, 16)), {"aten.prelu.default": 1}),
    # nearest upsampling by 8 and by unequal scales (upsample_nearest2d_converter.py: each 1, 2, 4 or 8)
    "nearest_x8": (lambda: nn.Upsample(scale_factor=8), randn((1, 8, 2, 3)), {"aten.upsample_nearest2d.vec": 1}),
    "nearest_2x4": (lambda: nn.Upsample(scale_factor=(2, 4)), randn((1, 16, 3, 2)),
                    {"aten.upsample_nearest2d.vec": 1}),
    # bilinear upsampling (upsample_bilinear2d_converter.py: each scale 1, 2, 4 or 8; with align_corners
    # (out - 1) / (in - 1))
    "bilinear_x8": (lambda: nn.Upsample(scale_factor=8, mode="bilinear"), randn((1, 8, 2, 3)),
                    {"aten.upsample_bilinear2d.vec": 1}),
    "bilinear_4x2": (lambda: nn.Upsample(scale_factor=(4, 2), mode="bilinear"), randn((1, 16, 3, 5)),
                     {"aten.upsample_bilinear2d.vec": 1}),
    "bilinear_ac_5x9_to_9x17": (lambda: nn.Upsample(size=(9, 17), mode="bilinear", align_corners=True),
                                randn((1, 8, 5, 9)), {"aten.upsample_bilinear2d.vec": 1}),
    # amax / amin (amax_converter.py, amin_converter.py): shared qparams
    "amax_last_keepdim": (f(lambda s, a: torch.amax(a, -1, keepdim=True)), randn((1, 6, 32)),
                          {"aten.amax.default": 1}),
    "amax_channels": (f(lambda s, a: torch.amax(a, 1)), randn((1, 8, 5, 6)), {"aten.amax.default": 1}),
    "amin_last": (f(lambda s, a: torch.amin(a, -1)), randn((2, 5, 24)), {"aten.amin.default": 1}),
    "amin_hw_keepdim": (f(lambda s, a: torch.amin(a, (2, 3), keepdim=True)), randn((1, 16, 7, 3)),
                        {"aten.amin.default": 1}),
    # the largest accepted values of NXP's limits (the first refused ones are rows of benchmarks/op_parity.py)
    "avg_pool_k4096": (lambda: nn.AvgPool2d((1, 4096)), randn((1, 2, 1, 4096)), {"aten.avg_pool2d.default": 1}),
    "avg_pool_s4096": (lambda: nn.AvgPool2d((1, 2), (1, 4096)), randn((1, 3, 1, 4098)),
                       {"aten.avg_pool2d.default": 1}),
    "max_pool_s4096": (lambda: nn.MaxPool2d((1, 2), (1, 4096)), randn((1, 4, 1, 4098)),
                       {"aten.max_pool2d_with_indices.default": 1}),
    "conv_s4096": (lambda: nn.Conv2d(2, 4, 1, (1, 4096)), randn((1, 2, 1, 4098)), {"aten.convolution.default": 1}),
    "conv_k16_cin248": (lambda: nn.Conv2d(248, 4, 16), randn((1, 248, 16, 16)), {"aten.convolution.default": 1}),
    "softmax_2040": (lambda: nn.Softmax(-1), randn((1, 2040)), {"aten._softmax.default": 1}),
    "softmax_rows_4096": (lambda: nn.Softmax(-1), randn((4096, 8)), {"aten._softmax.default": 1}),
    "softmax_total_524288": (lambda: nn.Softmax(-1), randn((1024, 512)), {"aten._softmax.default": 1}),
    # other accepted branches: any permutation (permute_copy_converter.py), general clamp bounds with shared
    # qparams (clamp_converter.py, hardtanh_converter.py), transposed conv1d (convert_1d_conv_to_2d.py), a
    # constant added after a bias-less linear (fuse_linear_and_add_pass.py), division by a constant
    # (convert_div_to_mul.py), split (decompose_split_to_slices_pass.py), padding of the batch / with a value
    "permute_batch2": (f(lambda s, a: a.permute(1, 0, 2, 3)), randn((2, 4, 5, 6)), None),
    "permute_rank5": (f(lambda s, a: a.permute(0, 4, 1, 2, 3)), randn((1, 2, 3, 4, 5)), None),
    "clamp_general": (f(lambda s, a: a.clamp(-0.5, 0.5)), randn((1, 8, 5, 6)), {"aten.clamp.default": 1}),
    "hardtanh_m2_2": (lambda: nn.Hardtanh(-2.0, 2.0), randn((1, 8, 5, 6)), {"aten.hardtanh.default": 1}),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(4, 6, 2, 2), randn((1, 4, 10)), None),
    "linear_plus_param": (f(lambda s, a: s.mods[1](s.mods[0](a)), nn.Linear(16, 8, bias=False), Param(torch.add, 8)),
                          randn((5, 16)), None),
    "div_param": (lambda: Param(torch.div, 32), randn((1, 6, 32)), {"aten.mul.Tensor": 1}),
    "split_two": (f(lambda s, a: torch.split(a, [3, 5], 1)), randn((1, 8, 4, 6)), {"aten.slice_copy.Tensor": 2}),
    "pad_batch": (f(lambda s, a: F.pad(a, (0, 0, 0, 0, 0, 0, 1, 0))), randn((1, 4, 3, 5)),
                  {"aten.constant_pad_nd.default": 1}),
    "pad_value": (f(lambda s, a: F.pad(a, (1, 1, 1, 1), value=0.5)), randn((1, 8, 5, 6)),
                  {"aten.constant_pad_nd.default": 1}),
    # NXP's release refuses operands that both broadcast; one is expanded first, as concatenated copies
    # (passes/broadcast_operand_to_expand.py, expand_to_cat.py)
    "add_both_broadcast": (f(lambda s, a, b: a + b), randn((1, 8, 1), (1, 1, 32)),
                           {"aten.add.Tensor": 1, "aten.cat.default": 1}),
    "mul_both_broadcast_ranks": (f(lambda s, a, b: a * b), randn((1, 8, 1), (5,)),
                                 {"aten.mul.Tensor": 1, "aten.cat.default": 1}),
    "maximum_both_broadcast": (f(lambda s, a, b: torch.maximum(a, b)), randn((1, 8, 1), (1, 1, 6)),
                               {"aten.maximum.default": 1, "aten.cat.default": 1}),
}


@pytest.mark.parametrize("name", CASES)
def test_sdk_current_delegates_within_one_step(name):
    make, inputs_of, expected_ops = CASES[name]
    g = torch.Generator().manual_seed(0)
    inputs = inputs_of(g)
    torch.manual_seed(0)
    r = lower_and_run(make().eval(), inputs, calib=[inputs] + [inputs_of(g) for _ in range(4)])
    if expected_ops is not None:
        assert r.delegated_ops == expected_ops, str(r.result.report)
    assert not r.rejections, [j.message() for j in r.rejections]
    for out, ref, scale in zip(r.outputs, r.references, r.output_scales):
        assert_within_steps(out, ref, 1, scale)


def _rejections(name_or_make, inputs, **spec):
    make = CASES[name_or_make][0] if isinstance(name_or_make, str) else name_or_make
    torch.manual_seed(0)
    return lower(make().eval(), inputs, [inputs], **spec).report


# name: (model factory, inputs, rejected op, reason fragment) under sdk-current: NXP's release refuses them too
REFUSED = {
    # (one operand expanded cannot be written with a prime count above 16: the add keeps the operands as they are)
    "add_both_broadcast_prime": (f(lambda s, a, b: a + b), randn((1, 17, 1), (1, 1, 19)), "aten.add.Tensor",
                                 "both broadcast"),
    "maximum_both_broadcast_prime": (f(lambda s, a, b: torch.maximum(a, b)), randn((1, 17, 1), (1, 1, 19)),
                                     "aten.maximum.default", "both broadcast"),
    # replicate / circular padding becomes slices + cat (passes/pad_modes_to_cat.py), but not with a negative pad
    "pad_replicate_cropping": (f(lambda s, a: F.pad(a, (-1, 2, 1, 1), mode="replicate")), randn((1, 8, 5, 6)),
                               "aten.pad.default", "pad mode 'replicate'"),
    # the first refused value of each limit whose largest accepted value is a case above
    "conv_k16_cin249": (lambda: nn.Conv2d(249, 4, 16), randn((1, 249, 16, 16)), "aten.convolution.default",
                        "65536 weight slots: kernel_h * kernel_w * round_up(in_channels, 8) <= 65535"),
    "conv_transpose_k16_cin249": (lambda: nn.ConvTranspose2d(249, 4, 16, 2), randn((1, 249, 2, 2)),
                                  "aten.convolution.default", "65536 weight slots: kernel_h"),
    "conv_transpose_s3": (lambda: nn.ConvTranspose2d(8, 8, 3, 3), randn((1, 8, 4, 5)), "aten.convolution.default",
                          "stride <= 2"),
    "conv_transpose_p_eq_k": (lambda: nn.ConvTranspose2d(8, 8, 2, 2, padding=2), randn((1, 8, 6, 5)),
                              "aten.convolution.default", "with kernel [2, 2]: transposed: padding < kernel"),
    "max_pool_s4097": (lambda: nn.MaxPool2d((1, 2), (1, 4097)), randn((1, 2, 1, 4099)),
                       "aten.max_pool2d_with_indices.default", "stride [1, 4097]: stride <= 4096"),
    "softmax_2048": (lambda: nn.Softmax(-1), randn((1, 2048)), "aten._softmax.default", "2048 channels: channels <= 2040"),
    # beyond 4096 rows or 524288 elements NXP refuses a softmax; ours computes it in row chunks, each within those
    # limits (tests/ops/test_table_ops.py::test_large_softmax_is_chunked_within_one_softmax_limits)
    "nearest_x16": (lambda: nn.Upsample(scale_factor=16), randn((1, 4, 2, 2)), "aten.upsample_nearest2d.vec",
                    "1, 2, 4 or 8"),
    "bilinear_align_corners_h1": (lambda: nn.Upsample(size=(2, 7), mode="bilinear", align_corners=True),
                                  randn((1, 8, 1, 4)), "aten.upsample_bilinear2d.vec", "input of size 1"),
    # rows 1 and 5 of 6: no window of groups of 4 holds both (passes/strided_slice_to_reshape.py leaves it)
    "slice_step4": (f(lambda s, a: a[:, :, 1::4]), randn((1, 8, 6, 4)), "aten.slice_copy.Tensor", "step 4"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_sdk_current_refusals_name_the_reason(name):
    make, inputs_of, op, fragment = REFUSED[name]
    report = _rejections(make, inputs_of(torch.Generator().manual_seed(0)))
    mine = [j for j in report.rejections if j.op == op]
    assert mine and fragment in mine[0].reason, str(report)
    assert op not in report.delegated_ops


# cases the documented table refuses: name in CASES -> reason fragment
DOCUMENTED_REFUSES = {"add_nc11": "inputs of equal shape, or a scalar operand", "sub_t1": "documented operator table",
                      "mul_param_32": "ranks 3 and 1", "rsqrt": "documented operator table",
                      "sum_last_keepdim": "documented operator table", "maximum": "documented operator table",
                      "minimum_2d": "documented operator table", "amax_channels": "documented operator table",
                      "amin_last": "documented operator table", "exp": "documented operator table",
                      "log": "documented operator table"}


@pytest.mark.parametrize("name", DOCUMENTED_REFUSES)
def test_documented_profile_refuses_with_its_reason(name):
    make, inputs_of, expected_ops, = CASES[name]
    report = _rejections(name, inputs_of(torch.Generator().manual_seed(0)), constraints="documented")
    op = next(iter(expected_ops))
    mine = [j for j in report.rejections if j.op == op]
    assert mine and DOCUMENTED_REFUSES[name] in mine[0].reason, str(report)


@pytest.mark.parametrize("profile", ["documented", "sdk-current"])
def test_scalar_constant_operand_is_delegated_in_both_profiles(profile):
    """`x + 1.0`: SUPPORTED_OPS.md says scalars are accepted, and the check agrees (it used to say shapes differ)."""
    make, inputs_of, _ = CASES["add_scalar"]
    g = torch.Generator().manual_seed(0)
    inputs = inputs_of(g)
    r = lower_and_run(make().eval(), inputs, calib=[inputs] + [inputs_of(g) for _ in range(4)], constraints=profile)
    assert r.delegated_ops == {"aten.add.Tensor": 1}, str(r.result.report)
    assert_within_steps(r.output, r.reference, 1, r.output_scale)


# x.sum() to a 0-d scalar (sum_dim_int_list_converter.py; NXP's SumPattern quantizes aten.sum.default): the sum
# runs on the NPU with keepdim (passes/reduce_all_keepdim.py), only the reshape to () (a view) stays on the CPU
SUM_ALL = {"rank3": (1, 6, 20), "rank4": (1, 4, 5, 6), "rank2": (3, 24)}


@pytest.mark.parametrize("shape", SUM_ALL.values(), ids=SUM_ALL.keys())
def test_sum_to_a_scalar_is_delegated_and_the_pte_is_within_one_step(shape):
    from harness import model_output_qparams, quantize_np, steps
    from executorch_neutron.runtime import run

    g = torch.Generator().manual_seed(0)
    samples = [(torch.randn(*shape, generator=g),) for _ in range(5)]
    torch.manual_seed(0)
    result = lower(f(lambda s, a: a.sum())().eval(), samples[0], samples)
    assert result.report.delegated_ops == {"aten.sum.dim_IntList": 1}, str(result.report)
    assert [j.op for j in result.report.rejections] == ["aten.view_copy.default"], str(result.report)
    (scale, zp), = model_output_qparams(result.quantized_model)
    for x in samples:
        out = run(result.pte, x)[0]
        with torch.no_grad():
            ref = result.quantized_model(*x)
        assert out.shape == ref.shape == ()
        assert steps(quantize_np(out.numpy(), scale, zp), quantize_np(ref.numpy(), scale, zp)).max() <= 1

"""The passes that write suite-gap operators from table ops (glu, square / pow, threshold, hardsigmoid of any rank,
elu / selu / celu, logsigmoid, softplus / mish, log1p, layer norm over trailing dims, instance norm, var, dilated max pools, average pools with ceil_mode, circular and replicate padding, bilinear
halvings): each rewritten graph computes what the
original did (float, before quantization, against eager PyTorch), the op it replaces is gone, and what it must not
touch is left alone."""

import functools

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron.passes.avg_pool_ceil import avg_pool_ceil
from executorch_neutron.passes.dilated_max_pool import dilated_max_pool
from executorch_neutron.passes.elu_decompose import elu_decompose
from executorch_neutron.passes.group_norm_decompose import group_norm_decompose
from executorch_neutron.passes.layer_norm_decompose import layer_norm_decompose
from executorch_neutron.passes.glu_to_sigmoid_mul import glu_to_sigmoid_mul
from executorch_neutron.passes.hardsigmoid_to_conv import hardsigmoid_to_conv
from executorch_neutron.passes.log1p_to_log import log1p_to_log
from executorch_neutron.passes.log_sigmoid_decompose import log_sigmoid_decompose
from executorch_neutron.passes.pad_modes_to_cat import pad_modes_to_cat
from executorch_neutron.passes.pow_to_mul import pow_to_mul
from executorch_neutron.passes.resize_halve_to_pool import resize_halve_to_pool
from executorch_neutron.passes.softplus_decompose import softplus_decompose
from executorch_neutron.passes.threshold_to_clamp import threshold_to_clamp
from executorch_neutron.passes.var_decompose import var_decompose
from harness import Fn

pytestmark = pytest.mark.fast
aten = torch.ops.aten


def randn(*shape):
    return torch.randn(*shape) * 3


def _affine(layer):
    """`layer` with random (not the initial 1 and 0) affine parameters."""
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn(p.shape))
    return layer


# name: (model factory, input, pass, op that must be gone, op that must be present)
CASES = {
    "glu_middle": (lambda: Fn(lambda s, a: F.glu(a, 1)), randn(3, 8, 5), glu_to_sigmoid_mul, aten.glu.default,
                   aten.sigmoid.default),
    "square": (lambda: Fn(lambda s, a: torch.square(a)), randn(5, 10), pow_to_mul, aten.square.default,
               aten.mul.Tensor),
    "pow_3": (lambda: Fn(lambda s, a: a ** 3), randn(2, 7), pow_to_mul, aten.pow.Tensor_Scalar, aten.mul.Tensor),
    "threshold_0": (lambda: nn.Threshold(0.0, 0.0), randn(20), threshold_to_clamp, aten.threshold.default,
                    aten.relu.default),
    "threshold_equal": (lambda: nn.Threshold(0.5, 0.5), randn(3, 4, 5), threshold_to_clamp, aten.threshold.default,
                        aten.clamp.default),
    "hardsigmoid_rank1": (lambda: nn.Hardsigmoid(), randn(20), hardsigmoid_to_conv, aten.hardsigmoid.default,
                          aten.conv2d.default),
    "hardsigmoid_rank3": (lambda: nn.Hardsigmoid(), randn(3, 4, 5), hardsigmoid_to_conv, aten.hardsigmoid.default,
                          aten.conv2d.default),
    "elu": (lambda: nn.ELU(alpha=0.7), randn(2, 3, 4, 5), elu_decompose, aten.elu.default, aten.exp.default),
    "elu_scale_input_scale": (lambda: Fn(lambda s, a: aten.elu.default(a, 0.7, 1.3, 0.6)), randn(2, 3, 4, 5),
                              elu_decompose, aten.elu.default, aten.exp.default),
    "selu": (lambda: nn.SELU(), randn(2, 3, 4, 5), elu_decompose, aten.selu.default, aten.exp.default),
    "celu": (lambda: nn.CELU(alpha=0.5), randn(2, 3, 4, 5), elu_decompose, aten.celu.default, aten.exp.default),
    "softplus": (lambda: nn.Softplus(), randn(2, 3, 4, 5) * 3, softplus_decompose, aten.softplus.default,
                 aten.log.default),
    "softplus_beta": (lambda: nn.Softplus(beta=2.5), randn(3, 4, 5), softplus_decompose, aten.softplus.default,
                      aten.log.default),
    "mish": (lambda: nn.Mish(), randn(3, 4, 5), softplus_decompose, aten.mish.default, aten.tanh.default),
    "layer_norm_hw": (lambda: _affine(nn.LayerNorm([5, 6])), randn(2, 3, 5, 6), layer_norm_decompose,
                      aten.layer_norm.default, aten.rsqrt.default),
    "layer_norm_chw": (lambda: nn.LayerNorm([3, 5, 6], elementwise_affine=False), randn(2, 3, 5, 6),
                       layer_norm_decompose, aten.layer_norm.default, aten.reshape.default),
    "layer_norm_rank3_two_dims": (lambda: _affine(nn.LayerNorm([4, 5])), randn(3, 4, 5), layer_norm_decompose,
                                  aten.layer_norm.default, aten.reshape.default),
    "instance_norm2d": (lambda: nn.InstanceNorm2d(3), randn(2, 3, 5, 6), group_norm_decompose,
                        aten.instance_norm.default, aten.rsqrt.default),
    "instance_norm2d_affine": (lambda: _affine(nn.InstanceNorm2d(3, affine=True)), randn(2, 3, 5, 6),
                               group_norm_decompose, aten.instance_norm.default, aten.conv2d.default),
    "instance_norm1d_affine": (lambda: _affine(nn.InstanceNorm1d(4, affine=True)), randn(2, 4, 7),
                               group_norm_decompose, aten.instance_norm.default, aten.conv1d.default),
    "var_hw": (lambda: Fn(lambda s, a: a.var((2, 3), keepdim=True)), randn(2, 3, 5, 6), var_decompose,
               aten.var.dim, aten.mean.dim),
    "var_last_correction_0": (lambda: Fn(lambda s, a: a.var(-1, correction=0)), randn(3, 4, 5), var_decompose,
                              aten.var.correction, aten.sum.dim_IntList),
    "var_all_correction_2": (lambda: Fn(lambda s, a: torch.var(a, correction=2)), randn(3, 4, 5), var_decompose,
                             aten.var.correction, aten.sum.dim_IntList),
    "logsigmoid": (lambda: nn.LogSigmoid(), randn(3, 4, 5), log_sigmoid_decompose, aten.log_sigmoid.default,
                   aten.log.default),
    "log1p": (lambda: Fn(lambda s, a: torch.log1p(a)), torch.rand(3, 4, 5) * 4, log1p_to_log, aten.log1p.default,
              aten.log.default),
    "max_pool_dilation_2": (lambda: nn.MaxPool2d(3, stride=2, dilation=2), randn(1, 8, 11, 13), dilated_max_pool,
                            None, aten.maximum.default),
    "max_pool_dilation_2x1_stride_1": (lambda: nn.MaxPool2d((2, 3), stride=1, dilation=(2, 1)), randn(1, 8, 9, 10),
                                       dilated_max_pool, None, aten.maximum.default),
    "avg_pool_ceil": (lambda: nn.AvgPool2d((1, 3), ceil_mode=True), randn(1, 8, 1, 100), avg_pool_ceil, None,
                      aten.cat.default),
    "avg_pool_ceil_counted_padding": (lambda: nn.AvgPool2d((1, 3), (1, 2), (0, 1), ceil_mode=True),
                                      randn(1, 8, 1, 100), avg_pool_ceil, None, aten.constant_pad_nd.default),
    "avg_pool_ceil_uncounted_padding": (lambda: nn.AvgPool2d((3, 1), (2, 1), (1, 0), ceil_mode=True,
                                                             count_include_pad=False), randn(1, 8, 10, 6),
                                        avg_pool_ceil, None, aten.cat.default),
    "pad_circular": (lambda: nn.Conv2d(3, 6, 3, padding=(2, 1), padding_mode="circular"), randn(2, 3, 7, 9),
                     pad_modes_to_cat, aten.pad.default, aten.cat.default),
    "pad_replicate_1d": (lambda: nn.Conv1d(3, 6, 3, padding=2, padding_mode="replicate"), randn(2, 3, 11),
                         pad_modes_to_cat, aten.pad.default, aten.cat.default),
    "bilinear_halve": (lambda: nn.Upsample(scale_factor=0.5, mode="bilinear"), randn(2, 3, 8, 7),
                       resize_halve_to_pool, aten.upsample_bilinear2d.vec, aten.avg_pool2d.default),
    "bilinear_halve_h_by_size": (lambda: nn.Upsample(size=(5, 9), mode="bilinear"), randn(1, 3, 10, 9),
                                 resize_halve_to_pool, aten.upsample_bilinear2d.vec, aten.avg_pool2d.default),
}


@pytest.mark.parametrize("name", CASES)
def test_pass_preserves_values(name):
    make, x, fn, gone, present = CASES[name]
    model = make().eval()
    gm = fn(torch.export.export(model, (x,), strict=False).module())
    after = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert gone is None or gone not in after, after
    assert present in after, after
    torch.testing.assert_close(gm(x), model(x), rtol=1e-5, atol=1e-5)


LEFT_ALONE = {
    # PyTorch's linear region starts at beta * x > threshold: below 15 the stable form differs there
    "softplus_threshold_1": (lambda: nn.Softplus(threshold=1.0), randn(5), softplus_decompose,
                             aten.softplus.default),
    "mish_without_tanh": (lambda: nn.Mish(), randn(5), functools.partial(softplus_decompose, with_tanh=False),
                          aten.mish.default),
    # running statistics: not the input's (eval mode of track_running_stats=True)
    "instance_norm_running_stats": (lambda: nn.InstanceNorm2d(3, track_running_stats=True), randn(1, 3, 4, 5),
                                    group_norm_decompose, aten.instance_norm.default),
    # n <= correction: PyTorch's inf / nan
    "var_no_degrees_of_freedom": (lambda: Fn(lambda s, a: a.var(-1, correction=3)), randn(4, 3), var_decompose,
                                  aten.var.correction),
    "pow_4": (lambda: Fn(lambda s, a: a ** 4), randn(5), pow_to_mul, aten.pow.Tensor_Scalar),
    "threshold_jump": (lambda: nn.Threshold(1.0, 0.0), randn(5), threshold_to_clamp, aten.threshold.default),
    "max_pool_dilation_padded": (lambda: nn.MaxPool2d(2, dilation=2, padding=1), randn(1, 8, 9, 7),
                                 dilated_max_pool, aten.max_pool2d.default),
    "avg_pool_ceil_corner": (lambda: nn.AvgPool2d(2, ceil_mode=True), randn(1, 8, 9, 7), avg_pool_ceil,
                             aten.avg_pool2d.default),
    # sampling steps 7 / 3 (an odd size halved by output size), and align_corners: not a pair average
    "bilinear_odd_by_size": (lambda: nn.Upsample(size=(3, 3), mode="bilinear"), randn(1, 2, 7, 7),
                             resize_halve_to_pool, aten.upsample_bilinear2d.vec),
    "bilinear_halve_align_corners": (lambda: nn.Upsample(scale_factor=0.5, mode="bilinear", align_corners=True),
                                     randn(1, 2, 8, 8), resize_halve_to_pool, aten.upsample_bilinear2d.vec),
}


@pytest.mark.parametrize("name", LEFT_ALONE)
def test_pass_leaves_alone(name):
    make, x, fn, op = LEFT_ALONE[name]
    gm = fn(torch.export.export(make().eval(), (x,), strict=False).module())
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [op]

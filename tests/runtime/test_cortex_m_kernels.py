"""Host cortex_m::* kernels vs the Cortex-M backend's own Python reference implementations, bit for bit.

Each case is one `torch.ops.cortex_m.<op>` call. The reference is that call in PyTorch (the wheel's
`executorch.backends.cortex_m.ops.operators`, which simulates CMSIS-NN's integer arithmetic); the result under
test is the same call exported to a one-op .pte (its `.out` variant) and run by the stock ExecuTorch runtime
with our host kernels (runtime/cortex_m_host_kernels.cpp).
"""

from __future__ import annotations

import pytest
import torch

from executorch_neutron.cortex_m import wheel

wheel.load()
from executorch.backends.cortex_m.passes.passes_utils import quantize_multiplier_aot  # noqa: E402

cm = torch.ops.cortex_m


def _i8(*shape, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randint(-128, 128, shape, dtype=torch.int8, generator=g)


def _mult(scale: float) -> tuple[int, int]:
    return quantize_multiplier_aot(scale)


class Op(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *x):
        return self.fn(*x)


def _run_pte(fn, inputs) -> torch.Tensor:
    from executorch.exir import EdgeCompileConfig, to_edge

    from executorch_neutron.runtime import run

    ep = torch.export.export(Op(fn), tuple(inputs), strict=False)
    program = to_edge(ep, compile_config=EdgeCompileConfig(_check_ir_validity=False)).to_executorch()
    ops = {op.name for op in program.executorch_program.execution_plan[0].operators}
    assert any(name.startswith("cortex_m::") for name in ops), ops  # the kernel under test is in the program
    return run(program.buffer, list(inputs))[0]


def _add(shape_a, shape_b, sa, sb, so, zps=(3, -7, 5), act=(-128, 127)):
    def case():
        a, b = _i8(*shape_a, seed=1), _i8(*shape_b, seed=2)
        m_out = max(sa, sb) * 2
        ma, sha = _mult(sa / m_out)
        mb, shb = _mult(sb / m_out)
        mo, sho = _mult(m_out / (so * (1 << 20)))
        fn = lambda a, b: cm.quantized_add(a, zps[0], ma, sha, b, zps[1], mb, shb, zps[2], mo, sho, *act)  # noqa: E731
        return fn, (a, b)
    return case


def _mul(shape_a, shape_b, scale, zps=(-4, 9, 2)):
    def case():
        a, b = _i8(*shape_a, seed=3), _i8(*shape_b, seed=4)
        m, s = _mult(scale)
        return (lambda a, b: cm.quantized_mul(a, zps[0], b, zps[1], zps[2], m, s)), (a, b)
    return case


def _div(shape, scale, zps=(3, -2, 1)):
    def case():
        a, b = _i8(*shape, seed=27), _i8(*shape, seed=28)
        b[..., 0] = zps[1]  # some divisors are exactly zero after the zero point: the kernel gives 0 there
        return (lambda a, b: cm.quantized_div(a, zps[0], b, zps[1], zps[2], scale)), (a, b)
    return case


def _linear(rows, k, n, bias=True, act=(-128, 127), in_off=5, out_off=-3):
    def case():
        x, w = _i8(rows, k, seed=5), _i8(n, k, seed=6)
        b = torch.randint(-5000, 5000, (n,), dtype=torch.int32, generator=torch.Generator().manual_seed(7))
        m, s = _mult(0.0123 / 7.5)
        if bias:
            fn = lambda x, w, b: cm.quantized_linear(x, w, b, None, in_off, 0, out_off, [m], [s], act[1], act[0])  # noqa: E731
            return fn, (x, w, b)
        return (lambda x, w: cm.quantized_linear(x, w, None, None, in_off, 0, out_off, [m], [s], act[1], act[0])), (x, w)
    return case


def _softmax(shape, dim, in_scale, zp):
    def case():
        from executorch.backends.cortex_m.passes.aten_to_cortex_m_pass import _compute_softmax_params

        mult, shift, diff_min = _compute_softmax_params(in_scale)
        return (lambda x: cm.softmax(x, dim, zp, -128, mult, shift, diff_min)), (_i8(*shape, seed=8),)
    return case


def _activation(shape, fn_float, in_q, out_q):
    def case():
        q = torch.arange(-128, 128, dtype=torch.float32)
        lut = torch.clamp(torch.round(fn_float((q - in_q[1]) * in_q[0]) / out_q[0]) + out_q[1], -128, 127)
        return (lambda x, lut: cm.quantized_activation(x, lut)), (_i8(*shape, seed=9), lut.to(torch.int8))
    return case


def _quantize(shape, scale, zp):
    def case():
        x = torch.randn(shape, generator=torch.Generator().manual_seed(10)) * 3
        return (lambda x: cm.quantize_per_tensor(x, scale, zp, -128, 127, torch.int8)), (x,)
    return case


def _dequantize(shape, scale, zp):
    def case():
        return (lambda x: cm.dequantize_per_tensor(x, scale, zp, -128, 127, torch.int8)), (_i8(*shape, seed=11),)
    return case


def _bmm(b, n, k, m):
    def case():
        lhs, rhs_t = _i8(b, n, k, seed=12), _i8(b, m, k, seed=13)
        mult, shift = _mult(0.0021)
        fn = lambda x, y: cm.quantized_batch_matmul(x, 6, y, -2, 4, mult, shift, torch.empty(0, dtype=torch.int8))  # noqa: E731
        return fn, (lhs, rhs_t)
    return case


def _maxpool(shape, k, s, p):
    def case():
        return (lambda x: cm.quantized_max_pool2d(x, k, s, p, [1, 1], False, -3, -3, -128, 127)), (_i8(*shape, seed=14),)
    return case


def _conv(n, c, h, w, o, k, stride, pad, dil, groups=1, bias=True, act=(-128, 127)):
    def case():
        x, wt = _i8(n, c, h, w, seed=18), _i8(o, k[0], k[1], c // groups, seed=19)
        g = torch.Generator().manual_seed(20)
        b = torch.randint(-3000, 3000, (o,), dtype=torch.int32, generator=g)
        mults, shifts = zip(*[_mult(0.0004 * (1 + i % 3)) for i in range(o)])
        m, s = torch.tensor(mults, dtype=torch.int32), torch.tensor(shifts, dtype=torch.int32)
        scratch = torch.empty(0, dtype=torch.int8)
        if bias:
            fn = lambda x, wt, b: cm.quantized_conv2d(x, wt, b, stride, pad, dil, 7, -4, m, s, *act, scratch)  # noqa: E731
            return fn, (x, wt, b)
        return (lambda x, wt: cm.quantized_conv2d(x, wt, None, stride, pad, dil, 7, -4, m, s, *act, scratch)), (x, wt)
    return case


def _dwconv(n, c, h, w, mult, k, stride, pad):
    def case():
        o = c * mult
        x, wt = _i8(n, c, h, w, seed=21), _i8(1, k[0], k[1], o, seed=22)
        b = torch.randint(-3000, 3000, (o,), dtype=torch.int32, generator=torch.Generator().manual_seed(23))
        mults, shifts = zip(*[_mult(0.002 / (1 + i % 4)) for i in range(o)])
        m, s = torch.tensor(mults, dtype=torch.int32), torch.tensor(shifts, dtype=torch.int32)
        scratch = torch.empty(0, dtype=torch.int8)
        fn = lambda x, wt, b: cm.quantized_depthwise_conv2d(x, wt, b, stride, pad, [1, 1], mult, -2, 3, m, s,  # noqa: E731
                                                            -128, 127, scratch)
        return fn, (x, wt, b)
    return case


def _conv_transpose(n, c, h, w, o, k, stride, pad, out_pad, bias=True):
    def case():
        x, wt = _i8(n, c, h, w, seed=29), _i8(o, k[0], k[1], c, seed=30)
        b = torch.randint(-3000, 3000, (o,), dtype=torch.int32, generator=torch.Generator().manual_seed(31))
        mults, shifts = zip(*[_mult(0.0007 * (1 + i % 2)) for i in range(o)])
        m, s = torch.tensor(mults, dtype=torch.int32), torch.tensor(shifts, dtype=torch.int32)
        scratch = torch.empty(0, dtype=torch.int8)

        def fn(x, wt, *b):
            return cm.quantized_transpose_conv2d(x, wt, b[0] if b else None, stride, pad, out_pad, [1, 1], 5, -1,
                                                 m, s, -128, 127, scratch, scratch)
        return fn, ((x, wt, b) if bias else (x, wt))
    return case


def _avgpool(shape, k, s, p, scale=0.037, zp=-6):
    def case():
        mult, shift = _mult(scale)
        scratch = torch.empty(0, dtype=torch.int8)
        return (lambda x: cm.quantized_avg_pool2d(x, k, s, p, False, zp, mult, shift, scratch)), (_i8(*shape, seed=24),)
    return case


def _pad(shape, pre, post, value):
    def case():
        return (lambda x: cm.pad(x, pre, post, value)), (_i8(*shape, seed=25),)
    return case


CASES = {
    "quantize_3x5x7": _quantize((3, 5, 7), 0.0173, -9),
    "quantize_zp_edge": _quantize((2, 11), 0.05, 127),
    "dequantize_2x3x4x5": _dequantize((2, 3, 4, 5), 0.031, 12),
    "add_same_shape": _add((1, 6, 5, 3), (1, 6, 5, 3), 0.02, 0.05, 0.06),
    "add_relu": _add((4, 9), (4, 9), 0.1, 0.03, 0.08, act=(-20, 127)),
    "add_rank1_small_scales": _add((13,), (13,), 0.001, 0.004, 0.003),
    "mul_same_shape": _mul((2, 5, 7), (2, 5, 7), 0.0009),
    "mul_2d_large_scale": _mul((3, 11), (3, 11), 0.04, zps=(0, 0, -128)),
    "div_with_zero_divisors": _div((3, 4, 5), 12.5),
    "div_small_scale": _div((2, 9), 0.7, zps=(0, 0, -5)),
    "linear_bias": _linear(3, 20, 10),
    "linear_no_bias_relu": _linear(1, 17, 6, bias=False, act=(-3, 127)),
    "linear_batched_rows": _linear(5, 8, 12),
    "softmax_last_10": _softmax((2, 10), -1, 0.05, -20),
    "softmax_dim1_4d": _softmax((1, 6, 3, 5), 1, 0.11, 4),
    "softmax_wide": _softmax((1, 37), 1, 0.02, 0),
    "gelu_lut": _activation((2, 13, 3), torch.nn.functional.gelu, (0.03, -5), (0.02, -100)),
    "sigmoid_lut": _activation((1, 7, 5, 2), torch.sigmoid, (0.06, 3), (1 / 256, -128)),
    "bmm_2x3x8x5": _bmm(2, 3, 8, 5),
    "maxpool_k2_s2": _maxpool((1, 5, 8, 6), [2, 2], [2, 2], [0, 0]),
    "maxpool_k3_s1_p1": _maxpool((2, 3, 7, 5), [3, 3], [1, 1], [1, 1]),
    "conv_k3_s1_p1": _conv(1, 3, 9, 7, 8, (3, 3), [1, 1], [1, 1], [1, 1]),
    "conv_k3x2_s2_nobias_relu": _conv(2, 5, 8, 11, 6, (3, 2), [2, 2], [0, 1], [1, 1], bias=False, act=(-10, 127)),
    "conv_k5_s3_p2": _conv(1, 4, 13, 11, 5, (5, 5), [3, 3], [2, 2], [1, 1]),
    "conv_grouped": _conv(1, 6, 7, 5, 4, (1, 3), [1, 1], [0, 1], [1, 1], groups=2),
    "dwconv_k3_p1": _dwconv(1, 6, 8, 7, 1, (3, 3), [1, 1], [1, 1]),
    "dwconv_mult2_s2": _dwconv(1, 3, 9, 10, 2, (3, 3), [2, 2], [0, 0]),
    "conv_transpose_k3_s2": _conv_transpose(1, 4, 5, 6, 8, (3, 3), [2, 2], [0, 0], [0, 0]),
    "conv_transpose_k3_s3_p1_outpad": _conv_transpose(2, 3, 4, 3, 5, (3, 2), [3, 2], [1, 0], [1, 1], bias=False),
    "avgpool_k2_s2": _avgpool((1, 5, 8, 6), [2, 2], [2, 2], [0, 0]),
    "avgpool_k3_s1_p1": _avgpool((2, 3, 7, 9), [3, 3], [1, 1], [1, 1]),
    "pad_hw": _pad((1, 3, 4, 5), [0, 0, 1, 2], [0, 0, 2, 1], -128),
    "pad_3d": _pad((2, 4, 3), [0, 1, 0, 2], [0, 0, 3, 1], 7),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_kernel_matches_python_reference(case):
    fn, inputs = case()
    expected = fn(*inputs)
    got = _run_pte(fn, inputs)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert torch.equal(got, expected), f"{(got.to(torch.float32) - expected.to(torch.float32)).abs().max()} max diff"


def test_minimum_maximum_and_transpose():
    a, b = _i8(3, 4, 5, seed=15), _i8(3, 4, 5, seed=16)
    for fn in (lambda a, b: cm.minimum(a, b), lambda a, b: cm.maximum(a, b),
               lambda a, b: cm.transpose(a + 0 * b, [2, 0, 1])):
        assert torch.equal(_run_pte(fn, (a, b)), fn(a, b))


def test_missing_kernel_is_named():
    """An op the host library lacks (an _nhwc variant) fails with an error naming it, not a bare load failure."""
    from executorch_neutron.runtime import NeutronRuntimeError

    x = _i8(1, 4, 6, 6, seed=17)
    with pytest.raises(NeutronRuntimeError, match=r"no host kernel for cortex_m::quantized_max_pool2d_nhwc\.out"):
        _run_pte(lambda x: cm.quantized_max_pool2d_nhwc(x, [2, 2], [2, 2], [0, 0], [1, 1], False, 0, 0, -128, 127),
                 (x,))

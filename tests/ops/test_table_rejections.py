"""One test per documented constraint: a node that breaks it stays on the CPU with the matching reason.

The table is NXP's documented one (`constraints="documented"`); where NXP's current SDK (the default profile
`sdk-current`) is more permissive, tests/ops/test_constraint_profiles.py checks the relaxation. Every case whose
constraint holds in both profiles is also checked under the default profile."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness import Fn

from executorch_neutron import lower



def f(fn, *mods):
    return lambda: Fn(fn, *mods)


def x(*shape):
    return (torch.randn(*shape),)


def rejections(make, inputs, **spec):
    torch.manual_seed(0)
    r = lower(make().eval(), inputs, [inputs], **spec)
    return r, r.report.rejections


# name: (model factory, inputs, rejected edge op, substring of the reason)
CASES = {
    "add_alpha": (f(lambda s, a, b: torch.add(a, b, alpha=2)), x(1, 8, 4, 6) * 2, "aten.add.Tensor", "alpha 2"),
    "add_broadcast": (f(lambda s, a, b: a + b), (torch.randn(1, 8, 4, 6), torch.randn(1, 8, 1, 1)),
                      "aten.add.Tensor", "input shapes [1, 8, 4, 6] and [1, 8, 1, 1]: inputs of equal shape"),
    "mul_size": (f(lambda s, a, b: a * b), (torch.randn(1, 3, 5, 7), torch.randn(1, 3, 5, 7)), "aten.mul.Tensor",
                 "tensor size 105: tensor size % 8 == 0"),
    "div_runtime_divisor": (f(lambda s, a, b: a / (b.abs() + 1)), (torch.randn(1, 8, 4, 6), torch.randn(1, 8, 4, 6)),
                            "aten.div.Tensor", "not quantized"),  # NeutronQuantizer keeps it float
    "bmm_dims": (f(lambda s, a, b: torch.bmm(a, b)), (torch.randn(2, 8, 12), torch.randn(2, 12, 8)),
                 "aten.bmm.default", "self shape [2, 8, 12]: width and channel dims of both arguments % 8 == 0"),
    "cat_channels": (f(lambda s, a, b: torch.cat([a, b], 1)), (torch.randn(1, 4, 3, 5), torch.randn(1, 8, 3, 5)),
                     "aten.cat.default", "channels 4: input channels % 8 == 0"),
    "clamp_bounds": (f(lambda s, a: torch.clamp(a, 0, 2)), x(1, 8, 4, 6), "aten.clamp.default", "bounds"),
    "hardtanh_range": (lambda: nn.Hardtanh(-2.0, 2.0), x(1, 8, 4, 6), "aten.hardtanh.default", "bounds"),
    "pad_channels": (f(lambda s, a: F.pad(a, (0, 0, 0, 0, 1, 1))), x(1, 8, 4, 6), "aten.constant_pad_nd.default",
                     "of a rank-4 tensor: padding of H or W only"),
    "conv_groups": (lambda: nn.Conv2d(8, 8, 3, groups=2), x(1, 8, 6, 5), "aten.convolution.default", "groups 2"),
    "conv_weights_input": (f(lambda s, a, w: F.conv2d(a, w)), (torch.randn(1, 8, 6, 5), torch.randn(8, 8, 3, 3)),
                           "aten.convolution.default", "not a constant"),
    "conv1d_input_weights": (f(lambda s, a, w: F.conv1d(a, w)), (torch.randn(1, 8, 9), torch.randn(8, 8, 3)),
                             "aten.convolution.default", "not a constant"),
    "conv_kernel_slots": (lambda: nn.Conv2d(7290, 8, 3, bias=False), x(1, 7290, 3, 3), "aten.convolution.default",
                          "65664 weight slots: kernel_h * kernel_w * round_up(in_channels, 8) <= 65535"),
    "conv_t_stride": (lambda: nn.ConvTranspose2d(8, 8, 3, stride=3), x(1, 8, 3, 5), "aten.convolution.default",
                      "stride"),
    "conv_t1d_stride": (lambda: nn.ConvTranspose1d(8, 8, 3, stride=3), x(1, 8, 5), "aten.convolution.default",
                        "stride"),
    "conv_t_padding": (lambda: nn.ConvTranspose2d(8, 8, 2, stride=2, padding=2), x(1, 8, 5, 6),
                       "aten.convolution.default", "padding"),
    "max_pool_dilation": (lambda: nn.MaxPool2d(2, dilation=2), x(1, 8, 9, 7),
                          "aten.max_pool2d_with_indices.default", "dilation"),
    "max_pool_channels": (lambda: nn.MaxPool2d(2), x(1, 6, 8, 10), "aten.max_pool2d_with_indices.default",
                          "channels 6"),
    "max_pool_batch": (lambda: nn.MaxPool2d(2), x(2, 8, 8, 10), "aten.max_pool2d_with_indices.default", "batch 2"),
    "max_pool_stride": (lambda: nn.MaxPool2d(3, stride=3), x(1, 8, 9, 12), "aten.max_pool2d_with_indices.default",
                        "stride"),
    "avg_pool_ceil": (lambda: nn.AvgPool2d(2, ceil_mode=True), x(1, 8, 9, 7), "aten.avg_pool2d.default",
                      "ceil_mode"),
    "avg_pool_count_pad": (lambda: nn.AvgPool2d(3, 1, 1), x(1, 8, 7, 9), "aten.avg_pool2d.default",
                           "count_include_pad"),
    "avg_pool_divisor": (lambda: nn.AvgPool2d(2, divisor_override=3), x(1, 8, 6, 8), "aten.avg_pool2d.default",
                         "divisor_override"),
    "adaptive_overlap": (lambda: nn.AdaptiveAvgPool2d((4, 4)), x(1, 8, 6, 9), "aten._adaptive_avg_pool2d.default",
                         "output size [4, 4] of input size [6, 9]: output size 1x1, or dividing the input size"),
    "mean_dims": (f(lambda s, a: a.mean(dim=1, keepdim=True)), x(1, 8, 4, 6), "aten.mean.dim", "[-1, -2]"),
    "mean_rank": (f(lambda s, a: a.mean(dim=(-1, -2))), x(8, 4, 6), "aten.mean.dim", "4D"),
    "mean_rank3_channels": (f(lambda s, a: a.mean(dim=1)), x(1, 8, 6), "aten.mean.dim", "4D"),
    # reversing 6 dims keeps no two adjacent: passes/permute_rank4.py finds no rank-4 batch-first form, in one
    # permutation or two (a rank-5 one or one that moves the batch dim is rewritten and delegated)
    "permute_rank6": (f(lambda s, a: torch.relu(a).permute(5, 4, 3, 2, 1, 0) * 2.0), x(2, 3, 5, 4, 7, 6),
                      "aten.permute_copy.default", "a rank-6 permutation: rank <= 4"),
    "prelu_channels": (lambda: nn.PReLU(6), x(1, 6, 4, 5), "aten.prelu.default", "channels 6"),
    "prelu_rows": (lambda: nn.PReLU(8), x(1, 8, 80, 64), "aten.prelu.default", "4096"),
    "prelu_rank": (lambda: nn.PReLU(8), x(2, 8, 5), "aten.prelu.default", "rank 3"),

    "clone_channels_last": (f(lambda s, a: torch.relu(a).contiguous(memory_format=torch.channels_last) * 2.0),
                            x(1, 8, 4, 6), "dim_order_ops._clone_dim_order.default", "dim_order"),
    "slice_step": (f(lambda s, a: torch.relu(a)[:, :, 1::4] * 2.0), x(1, 8, 6, 4), "aten.slice_copy.Tensor", "step 4"),
    "softmax_channels": (lambda: nn.Softmax(-1), x(2, 12), "aten._softmax.default", "12 channels"),
    "softmax_2048": (lambda: nn.Softmax(-1), x(1, 2048), "aten._softmax.default", "2048 channels: channels % 8 == 0 and channels < 2048"),
    "softmax_rank1": (lambda: nn.Softmax(-1), x(16), "aten._softmax.default", "rank 1"),
    "upsample_channels": (lambda: nn.Upsample(scale_factor=2), x(1, 6, 3, 4), "aten.upsample_nearest2d.vec",
                          "channels 6"),
    "upsample_scale3": (lambda: nn.Upsample(scale_factor=3, mode="bilinear"), x(1, 8, 3, 4),
                        "aten.upsample_bilinear2d.vec", "scales"),
    "upsample_unequal": (lambda: nn.Upsample(scale_factor=(2, 4)), x(1, 8, 3, 4), "aten.upsample_nearest2d.vec",
                         "scales"),
}


#: cases an ATen pass rewrites into table ops (so the constraint never meets them): checked without that pass
WITHOUT_PASS = {"add_alpha": "add_alpha_to_mul", "adaptive_overlap": "adaptive_pool_to_linear",
                "div_runtime_divisor": "div_by_tensor_to_rsqrt"}


def _without_rewrite(case, monkeypatch) -> None:
    name = next(n for n, c in CASES.items() if c is case)
    if name in WITHOUT_PASS:
        from executorch_neutron.passes import pipeline

        monkeypatch.setattr(pipeline, "PIPELINE", tuple(s for s in pipeline.PIPELINE if s.name != WITHOUT_PASS[name]))


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_constraint_keeps_node_on_cpu(case, monkeypatch):
    make, inputs, op, needle = case
    _without_rewrite(case, monkeypatch)
    r, rej = rejections(make, inputs, constraints="documented")
    mine = [j for j in rej if j.op == op]
    assert mine, f"{op} not rejected:\n{r.report}"
    assert any(needle in j.reason for j in mine), "\n".join(j.reason for j in mine)
    assert op not in r.report.delegated_ops


#: cases whose constraint NXP's current SDK does not enforce (delegated under sdk-current)
RELAXED_IN_SDK_CURRENT = {"add_broadcast", "clamp_bounds", "hardtanh_range", "mul_size", "cat_channels", "mean_dims",
                          "mean_rank", "mean_rank3_channels", "max_pool_channels", "softmax_channels",
                          "upsample_channels", "avg_pool_count_pad", "max_pool_batch", "max_pool_stride", "pad_channels",
                          "prelu_channels", "prelu_rank", "prelu_rows", "upsample_unequal",
                          "bmm_dims", "softmax_rank1", "conv_groups",
                          "max_pool_dilation"}  # tests/ops/test_sdk_parity.py


@pytest.mark.parametrize("name", sorted(set(CASES) - RELAXED_IN_SDK_CURRENT))
def test_constraint_also_holds_in_the_default_profile(name, monkeypatch):
    make, inputs, op, needle = CASES[name]
    _without_rewrite(CASES[name], monkeypatch)
    r, rej = rejections(make, inputs)
    assert any(j.op == op for j in rej), f"{op} not rejected under sdk-current:\n{r.report}"
    assert op not in r.report.delegated_ops


@pytest.mark.parametrize("name", ["aten::convolution", "aten.convolution.default", "convolution"])
def test_operators_not_to_delegate(name):
    r, rej = rejections(lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()), x(1, 3, 7, 9),
                        operators_not_to_delegate=(name,))
    conv = [j for j in rej if j.op == "aten.convolution.default"]
    assert conv and conv[0].reason == "excluded by operators_not_to_delegate"
    assert "aten.convolution.default" not in r.report.delegated_ops


def test_noop_only_partition_is_not_created():
    r, rej = rejections(f(lambda s, a: torch.flatten(a, 1).reshape(1, 24, 5)), x(1, 8, 3, 5))
    assert not r.report.partitions
    assert any("no-op" in j.reason for j in rej), str(r.report)


def test_allow_noop_partitions_option():
    r, _ = rejections(f(lambda s, a: torch.flatten(a, 1).reshape(1, 24, 5)), x(1, 8, 3, 5),
                      custom_delegation_options=("allow_noop_partitions",))
    assert len(r.report.partitions) == 1


def test_allow_any_permutation_option():
    r, rej = rejections(CASES["permute_rank6"][0], CASES["permute_rank6"][1],
                        custom_delegation_options=("allow_any_permutation",))
    assert r.report.delegated_ops.get("aten.permute_copy.default") == 1, str(r.report)


def test_unknown_delegation_option_is_an_error():
    from executorch_neutron import NeutronPartitioner

    with pytest.raises(ValueError, match="allow_float_constants"):
        NeutronPartitioner(custom_delegation_options=("allow_everything",))


def test_refused_preserved_op_is_decomposed_for_the_cpu():
    """hardswish and prelu have no CPU kernel: when the NPU refuses them they are decomposed, and the .pte runs."""
    from executorch_neutron.runtime import run

    model = nn.Sequential(nn.Conv2d(3, 8, 1), nn.Hardswish(), nn.PReLU(8)).eval()
    inputs = x(1, 3, 4, 6)
    r, rej = rejections(lambda: model, inputs, operators_not_to_delegate=("aten::hardswish", "aten::prelu"))
    assert not any(op in r.report.delegated_ops for op in ("aten.hardswish.default", "aten.prelu.default"))
    out = run(r.pte, list(inputs))[0]
    with torch.no_grad():
        ref = r.quantized_model(*inputs)
    assert torch.allclose(out, ref, atol=0.05), (out - ref).abs().max()


def _float_constant_mul_model():
    """A quantized model whose mul reads an unquantized float constant tensor (as other quantizers leave it)."""
    from executorch_neutron.lowering import quantize
    from executorch_neutron.quantizer import NeutronQuantizer

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", torch.rand(1, 8, 1, 1) + 0.5)

        def forward(self, a):
            return torch.relu(a) * self.c

    torch.manual_seed(0)
    inputs = x(1, 8, 4, 6)
    q = quantize(M().eval(), inputs, [inputs], NeutronQuantizer())
    mul = next(n for n in q.graph.nodes if n.target == torch.ops.aten.mul.Tensor)
    q.register_buffer("float_c", torch.rand(1, 8, 1, 1) + 0.5)
    with q.graph.inserting_before(mul):
        const = q.graph.get_attr("float_c")
    mul.args = (mul.args[0], const)
    q.graph.eliminate_dead_code()
    q.recompile()
    return q, inputs


def test_float_constant_tensor_operand_needs_the_option():
    q, inputs = _float_constant_mul_model()
    r = lower(q, inputs, quantize_model=False)
    mul = [j for j in r.report.rejections if j.op == "aten.mul.Tensor"]
    assert mul and "unquantized float constant" in mul[0].reason, str(r.report)

    from executorch_neutron.runtime import run

    r = lower(q, inputs, quantize_model=False, custom_delegation_options=("allow_float_constants",))
    assert r.report.delegated_ops.get("aten.mul.Tensor") == 1, str(r.report)
    out = run(r.pte, list(inputs))[0]
    with torch.no_grad():
        ref = q(*inputs)
    out_scale = float(next(n for n in q.graph.nodes if n.op == "output").args[0][0].args[1])
    assert (out - ref).abs().max().item() / out_scale <= 2.0  # the constant is rounded to int8 by the converter


def test_dequantize_shared_with_a_cpu_user_keeps_the_npu_user_on_the_cpu():
    """The partitioner may not change the graph: a dequantize read by an NPU op and by a CPU consumer (here the
    model output) cannot be split, so the NPU op stays on the CPU with that reason (and lowering succeeds)."""
    from executorch_neutron.lowering import quantize
    from executorch_neutron.quantizer import NeutronQuantizer

    torch.manual_seed(0)
    inputs = x(1, 8, 4, 6)
    q = quantize(Fn(lambda s, a: (torch.relu(a), torch.abs(a))).eval(), inputs, [inputs], NeutronQuantizer())
    relu = next(n for n in q.graph.nodes if n.target == torch.ops.aten.relu.default)
    out = next(n for n in q.graph.nodes if n.op == "output")
    out.args = ((out.args[0][0], relu.args[0]),)  # the second output now reads relu's input dequantize
    q.graph.eliminate_dead_code()
    q.recompile()
    r = lower(q, inputs, quantize_model=False)
    rej = [j for j in r.report.rejections if j.op == "aten.relu.default"]
    assert rej and "also read by" in rej[0].reason, str(r.report)


def test_div_needs_one_dimension_multiple_of_8():
    """NeutronQuantizer rewrites division by constants to mul, so a div.Tensor only reaches the partitioner from
    other quantizers: check the registry's constraint on the edge node directly."""
    from executorch.exir import to_edge

    from executorch_neutron import NeutronCompileSpec
    from executorch_neutron.ops import registry
    from executorch_neutron.ops.registry import CheckContext

    class Div(nn.Module):
        def __init__(self, shape):
            super().__init__()
            self.register_buffer("d", torch.rand(*shape) + 1)

        def forward(self, a):
            return a / self.d

    spec = NeutronCompileSpec(custom_delegation_options=("allow_float_constants",))
    for shape, expected in (((3, 5), "output shape [3, 5]: one dimension % 8 == 0, or scalar division"),
                            ((3, 8), None)):
        ep = to_edge(torch.export.export(Div(shape).eval(), (torch.randn(*shape),))).exported_program()
        node = next(n for n in ep.graph.nodes if "div" in str(n.target))
        failed = registry.lookup(node.target).check(node, CheckContext.for_program(spec, ep))
        assert (failed[0] if failed else None) == expected

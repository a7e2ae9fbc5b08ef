"""passes/inline_autocast.py (and remove_noops' same-dtype conversions): ops a model runs under `torch.autocast`
are quantized and delegated like any others. The block is EfficientViT's linear attention (timm's LiteMLA): ReLU
kernels, v padded with ones, matmuls in an autocast-disabled region after `.float()`, then a division by the
padded column, the one op Neutron cannot run (division by a computed tensor)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron import lower
from harness import assert_within_steps, lower_and_run


class LinearAttention(nn.Module):
    def __init__(self, c: int, dim: int, divide: bool):
        super().__init__()
        self.qkv, self.proj, self.dim, self.divide = nn.Conv2d(c, 3 * dim, 1), nn.Conv2d(dim, c, 1), dim, divide

    def forward(self, x):
        b, _, h, w = x.shape
        qkv = self.qkv(x).reshape(b, -1, 3 * self.dim, h * w).transpose(-1, -2)
        q, k, v = qkv.chunk(3, dim=-1)
        q, k = F.relu(q), F.relu(k)
        v = F.pad(v, (0, 1), mode="constant", value=1.0)
        with torch.autocast(device_type="cpu", enabled=False):
            q, k, v = q.float(), k.float(), v.float()
            out = q @ (k.transpose(-1, -2) @ v)
            out = out[..., :-1] / (out[..., -1:] + 1e-3) if self.divide else out[..., :-1] * 0.05
        return self.proj(out.transpose(-1, -2).reshape(b, -1, h, w))


class NestedRegions(nn.Module):
    """An autocast region inside another: the inner one is inlined after the outer one."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(12, 12)

    def forward(self, x):
        y = self.lin(x)
        with torch.autocast(device_type="cpu", enabled=False):
            z = y.float() @ y.transpose(-1, -2)
            with torch.autocast(device_type="cpu", enabled=False):
                z = torch.relu(z) * 0.5
        return z


# name: (model, input shape, bmm nodes). Bound 2 steps: the product of two computed int8 matrices (as for
# attention in test_transformers.py).
REGIONS = {
    "linear_attention": (lambda: LinearAttention(8, 16, divide=False), (1, 8, 5, 6), 2),
    "nested_regions": (NestedRegions, (1, 7, 12), 1),
}


@pytest.mark.parametrize("case", REGIONS.values(), ids=REGIONS.keys())
def test_autocast_region_runs_on_the_npu(case):
    make, shape, bmms = case
    torch.manual_seed(0)
    r = lower_and_run(make().eval(), (torch.randn(*shape),))
    assert not r.rejections, str(r.result.report)
    assert r.delegated_ops.get("aten.bmm.default") == bmms
    assert_within_steps(r.output, r.reference, 2, r.output_scale)


def test_only_the_division_by_a_computed_tensor_stays_on_the_cpu():
    torch.manual_seed(0)
    x = (torch.randn(1, 8, 4, 7),)
    r = lower(LinearAttention(8, 16, divide=True).eval(), x, [x, (torch.randn(1, 8, 4, 7),)])
    assert [j.op for j in r.report.rejections] == ["aten.div.Tensor"], str(r.report)
    reason = r.report.rejections[0].reason
    assert "computed at run time" in reason and "no division kernel" in reason and "\n" not in reason


@pytest.mark.parametrize("convert", ["float", "to_float32"])
def test_conversion_to_the_same_dtype_is_removed(convert):
    from executorch_neutron.passes import run_passes as run_aten_passes

    class M(nn.Module):
        def forward(self, a):
            a = torch.relu(a)
            return (a.float() if convert == "float" else a.to(torch.float32)) * 2.0

    gm = run_aten_passes(torch.export.export(M(), (torch.randn(2, 3),), strict=False).module())
    assert not any("to" in str(n.target).split(".")[-2:] or "_to_copy" in str(n.target)
                   for n in gm.graph.nodes if n.op == "call_function")

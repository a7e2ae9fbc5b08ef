"""Faults that must not lose or change anything: interrupted writes, the caller's model, XNNPACK profile rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.core import atomic
from executorch_neutron.models.zoo import calibration
from harness import model_output_qparams, quantize_np


class Interrupt(BaseException):
    pass


WRITERS = {
    "bytes": lambda path: atomic.write_bytes(path, b"new" * 1000),
    "text": lambda path: atomic.write_text(path, "new" * 1000),
}


@pytest.mark.parametrize("write", WRITERS.values(), ids=WRITERS.keys())
def test_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch, write):
    target = tmp_path / "model.pte"
    target.write_bytes(b"old valid content")
    real = Path.write_bytes

    def half_then_interrupt(self, data):
        real(self, data[: len(data) // 2])
        raise Interrupt  # Ctrl-C (KeyboardInterrupt) or a full disk (OSError) in the middle of the write

    monkeypatch.setattr(Path, "write_bytes", half_then_interrupt)
    with pytest.raises(Interrupt):
        write(target)
    monkeypatch.undo()
    assert target.read_bytes() == b"old valid content"
    assert [p.name for p in tmp_path.iterdir()] == ["model.pte"]  # no temporary file left behind
    write(target)
    assert target.read_bytes().startswith(b"new")


class WithDropoutAndBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.drop = nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(torch.relu(self.bn(self.conv(x))))


def test_lower_does_not_change_the_callers_model():
    torch.manual_seed(0)
    model = WithDropoutAndBatchNorm().train()  # a user who forgot eval(): lower() evaluates a copy
    before = {k: v.clone() for k, v in model.state_dict().items()}
    inputs = (torch.randn(1, 3, 9, 7),)
    lower(model, inputs, [inputs] + calibration(inputs, 3), reference=True)
    assert model.training and model.drop.training and model.bn.training
    after = model.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_profile_names_a_non_neutron_delegate_by_its_backend():
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    from executorch_neutron.profiling import profile

    model, x = nn.Sequential(nn.Linear(12, 6), nn.ReLU()).eval(), (torch.randn(2, 12),)
    pte = to_edge_transform_and_lower(torch.export.export(model, x), partitioner=[XnnpackPartitioner()]
                                      ).to_executorch().buffer
    prof = profile(pte, x, runs=2)
    names = [r.name for r in prof.delegate_rows]
    assert names == ["XNNPACK delegate 0"], names


class ScalarTail(nn.Module):
    """mean() and amax() give 0-d tensors, the mul and add between them 0-d results: a partition cannot output one."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        y = self.conv(x)
        return y.mean() * 2.0 + y.amax()


def test_a_zero_dim_tail_runs_on_the_npu_as_shape_1_and_the_pte_gives_a_zero_dim_output():
    from executorch_neutron.runtime import run

    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 8, 7),)
    r = lower(ScalarTail().eval(), inputs, [inputs] + calibration(inputs, 3), reference=True)
    # the reductions run with keepdim, the scalars are carried as [1] through the mul and add
    # (passes/reduce_all_keepdim.py); only the reshape to () is left, with the 0-d reason
    assert [(j.op, j.reason.split(":")[0]) for j in r.report.rejections] == [
        ("aten.view_copy.default", "0-d (scalar) tensor")]
    assert r.report.delegated_ops == {"aten.convolution.default": 1, "aten.mean.dim": 1, "aten.amax.default": 1,
                                      "aten.mul.Tensor": 1, "aten.add.Tensor": 1, "aten.view_copy.default": 2}, (
        r.report.delegated_ops)
    out = run(r.pte, list(inputs))[0]
    with torch.no_grad():
        ref = r.quantized_model(*inputs)
    assert out.shape == ref.shape == ()
    (scale, zp), = model_output_qparams(r.quantized_model)
    assert abs(quantize_np(out.numpy(), scale, zp).astype(int) - quantize_np(ref.numpy(), scale, zp).astype(int)) <= 1

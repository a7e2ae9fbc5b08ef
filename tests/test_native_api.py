"""The ExecuTorch-native flow works exactly as documented: no transform passes, no extra arguments."""

import torch
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from executorch_neutron import NeutronCompileSpec, NeutronPartitioner, NeutronQuantizer, lower
from executorch_neutron.models import zoo
from executorch_neutron.core.payload import unpack
from executorch_neutron.runtime import run
from harness import io_quant, quantize_np, run_tflite, steps, to_physical


def test_native_flow_full_delegation_and_intermediates(tmp_path):
    import executorch.kernels.quantized  # noqa: F401
    from executorch.exir import to_edge_transform_and_lower

    model, inputs = zoo.mobilenet_v2_like(resolution=32)
    q = NeutronQuantizer(target="imxrt700")
    m = prepare_pt2e(torch.export.export(model, inputs).module(), q)
    for x in zoo.calibration(inputs, 4):
        m(*x)
    m = convert_pt2e(m)
    spec = NeutronCompileSpec(target="imxrt700", intermediates_dir=str(tmp_path))
    partitioner = NeutronPartitioner(spec)
    edge = to_edge_transform_and_lower(torch.export.export(m, inputs), partitioner=[partitioner])
    pte = edge.to_executorch().buffer
    assert partitioner.rejections == []
    assert list(partitioner.partition_tags) == ["neutron_0"]

    tflite = (tmp_path / "neutron_0.tflite").read_bytes()  # anyone can run it in LiteRT
    in_q, out_q = io_quant(tflite)
    # default use_neutron_for_format_conversion=True: the partition takes ExecuTorch's NCHW tensor (format flag 0)
    out = run_tflite(tflite, [to_physical(quantize_np(inputs[0].numpy(), *in_q[0]), 0)])[0]
    with torch.no_grad():
        ref = quantize_np(m(*inputs).numpy(), *out_q[0])
    assert steps(out, ref).max() <= 3
    host = run(pte, inputs)[0].numpy()
    assert (quantize_np(host, *out_q[0]) == out).all()  # the .pte computes exactly what its TFLite computes


def test_format_conversion_off_leaves_the_transposes_to_the_runtime():
    model, inputs = zoo.cifarnet()
    calib = zoo.calibration(inputs, 2)
    on = lower(model, inputs, calib)
    off = lower(model, inputs, calib, use_neutron_for_format_conversion=False)
    h_on, h_off = unpack(on.report.partitions[0].blob).header, unpack(off.report.partitions[0].blob).header
    assert h_on.input_formats == (0,) and h_off.input_formats == (1,)
    a, b = run(on.pte, inputs)[0], run(off.pte, inputs)[0]
    torch.testing.assert_close(a, b, rtol=0, atol=0)


MEDIAN_NATIVE = '''
import torch
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from executorch_neutron import NeutronCompileSpec, NeutronPartitioner, NeutronQuantizer
from executorch_neutron.runtime import run


class Median(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.median(self.conv(x), dim=2)  # torch.return_types.median: values and indices


torch.manual_seed(0)
model, inputs = Median().eval(), (torch.randn(1, 3, 9, 7),)
m = prepare_pt2e(torch.export.export(model, inputs).module(), NeutronQuantizer(target="imxrt700"))
m(*inputs)
m = convert_pt2e(m)
edge = to_edge_transform_and_lower(torch.export.export(m, inputs),
                                   partitioner=[NeutronPartitioner(NeutronCompileSpec(target="imxrt700"))])
values, indices = run(edge.to_executorch().buffer, inputs)
with torch.no_grad():
    want = m(*inputs)
assert indices.dtype == torch.int64 and indices.shape == want[1].shape, (indices.dtype, indices.shape)
assert values.shape == want[0].shape
print("ok")
'''


def test_native_flow_emits_a_model_returning_torch_return_types():
    """The README's ExecuTorch-native way on a model returning `torch.median(x, dim)` in a fresh process (nothing
    run before it may have named PyTorch's return types): the .pte is written and runs."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", MEDIAN_NATIVE], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]

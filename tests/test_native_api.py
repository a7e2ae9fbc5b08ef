"""The ExecuTorch-native flow works exactly as documented: no transform passes, no extra arguments."""

import torch
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from executorch_neutron import NeutronCompileSpec, NeutronPartitioner, NeutronQuantizer, lower, zoo
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

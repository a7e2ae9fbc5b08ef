"""A CPU op between two partitions: the .pte equals chaining the two partition TFLites in LiteRT directly.

The CPU part (dequantize -> floor -> quantize; the `* 4` before it runs in the first partition) is exact in
float32, so the chain must match the .pte's output to the bit (0 quantization steps).
"""

import numpy as np
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.core.payload import unpack
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration
from harness import from_physical, io_quant, quantize_np, run_tflite, to_physical


class CpuOpBetween(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 1)

    def forward(self, x):
        return self.conv2(torch.floor(torch.relu(self.conv1(x)) * 4))


def _run_partition(blob, xs):
    p = unpack(blob)
    h = p.header
    outs = run_tflite(p.tflite, [to_physical(xs[h.input_args[i]], h.input_formats[i]) for i in range(h.n_inputs)])
    return [from_physical(o, h.output_formats[j]) for j, o in enumerate(outs)], io_quant(p.tflite)


def test_pte_equals_chained_partition_tflites():
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 9, 7),)
    result = lower(CpuOpBetween().eval(), inputs, [inputs] + calibration(inputs, 4))
    first, second = result.payloads.values()
    (in1, out1) = io_quant(unpack(first).tflite)
    (in2, out2) = io_quant(unpack(second).tflite)

    y1, _ = _run_partition(first, [quantize_np(inputs[0].numpy(), *in1[0])])
    s1, z1 = out1[0]
    cpu = np.floor((y1[0].astype(np.float32) - z1) * np.float32(s1))
    y2, _ = _run_partition(second, [quantize_np(cpu, *in2[0])])
    s2, z2 = out2[0]
    chained = (y2[0].astype(np.float32) - z2) * np.float32(s2)

    pte_out = run(result.pte, inputs)[0].numpy()
    steps = np.abs(np.round((pte_out - chained) / s2))
    assert steps.max() == 0, f"{steps.max()} steps between the .pte and the chained partitions"

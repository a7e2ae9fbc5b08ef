"""i.MX RT700 as one system: imxrt700 (NPU + portable float leftovers) vs imxrt700cm (NPU + Cortex-M33 int8).

For three small models whose leftovers are typical on an MCU (a 12-class softmax, sqrt, an excluded residual
add), prints per target: lowering time, float CPU kernels in the .pte (compute ops that are not cortex_m::* or
quantize/dequantize), cortex_m::* kernels, median host run time, and the worst difference from PyTorch's quantized
model in output quantization steps. No pass/fail: the figures are for reading. Host run times measure our host
kernels and LiteRT reference kernels on this machine, not the device.

    python benchmarks/rt700_cortex_m.py [--repeats 20] [--write-docs]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch import nn

F = nn.functional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _docs  # noqa: E402
from _timing import median_seconds  # noqa: E402


class KwsHead(nn.Module):
    """DS-CNN-like keyword spotter ending in a 12-class softmax (Neutron's documented table needs a multiple of 8)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 32, (5, 3), stride=2, padding=1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.pw = nn.Conv2d(32, 32, 1)
        self.fc = nn.Linear(32, 12)

    def forward(self, x):
        y = torch.relu(self.pw(torch.relu(self.dw(torch.relu(self.conv(x))))))
        return torch.softmax(self.fc(y.mean((2, 3))), -1)


class SqrtMlp(nn.Module):
    """Feed-forward block with a sqrt (no Neutron kernel; GELU now runs on the NPU) and a 10-class softmax head."""

    def __init__(self):
        super().__init__()
        self.up, self.down, self.head = nn.Linear(32, 64), nn.Linear(64, 32), nn.Linear(32, 10)

    def forward(self, x):
        y = x + self.down(torch.sqrt(F.relu(self.up(x))))
        return torch.softmax(self.head(y), -1)


class ResidualCnn(nn.Module):
    """Residual CNN whose adds are kept off the NPU (operators_not_to_delegate), sigmoid gate, 8-way head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.a, self.b = nn.Conv2d(16, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        y = torch.relu(self.stem(x))
        y = torch.relu(self.a(y)) + y
        y = self.b(y) * torch.sigmoid(y)
        return self.fc(y.mean((2, 3)))


MODELS = {
    # NXP's documented table refuses a 12-class softmax (sdk-current, the default, delegates it)
    "kws_ds_cnn_12_classes": (KwsHead, (1, 1, 49, 10), {"constraints": "documented"}),
    "sqrt_mlp": (SqrtMlp, (4, 32), {}),
    "residual_cnn_excluded_add": (ResidualCnn, (1, 3, 24, 20), {"operators_not_to_delegate": ("aten.add.Tensor",)}),
}




def _output_scale(quantized_model) -> float:
    out = next(n for n in quantized_model.graph.nodes if n.op == "output").args[0]
    return float((out[0] if isinstance(out, (tuple, list)) else out).args[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    _docs.add_argument(parser)
    args = parser.parse_args()
    with _docs.figures(args, "benchmarks/rt700_cortex_m.py", "rt700_cortex_m", "i.MX RT700: imxrt700 vs imxrt700cm"):
        _compare(args)


def _compare(args) -> None:
    from executorch_neutron import lower
    from executorch_neutron.pte import inspect_pte
    from executorch_neutron.runtime import load

    print(f"{'model':28} {'target':11} {'lower s':>8} {'float ops':>9} {'cortex_m':>8} {'run ms':>8} {'steps':>5}")
    for name, (cls, shape, options) in MODELS.items():
        torch.manual_seed(0)
        model = cls().eval()
        x = torch.randn(shape)
        calib = [(x,)] + [(torch.randn(shape),) for _ in range(16)]
        floats = {}
        for target in ("imxrt700", "imxrt700cm"):
            t0 = time.perf_counter()
            result = lower(model, (x,), calib, target=target, **options)
            seconds = time.perf_counter() - t0
            kernels = inspect_pte(result.pte).methods[0].cpu_kernels
            cortex = sum(n for k, n in kernels.items() if k.startswith("cortex_m::")
                         and "quantize_per_tensor" not in k)
            floats[target] = sum(n for k, n in kernels.items() if not k.startswith(("cortex_m::",
                                                                                      "quantized_decomposed::")))
            program = load(result.pte)
            run_s = median_seconds(lambda: program.execute([x]), args.repeats)
            got = program.execute([x])[0]
            with torch.no_grad():
                ref = result.quantized_model(x)
            steps = int(((got - ref).abs() / _output_scale(result.quantized_model)).round().max())
            print(f"{name:28} {target:11} {seconds:8.2f} {floats[target]:9d} {cortex:8d} {run_s * 1e3:8.3f} "
                  f"{steps:5d}")
        print(f"{'':28} float ops removed by the Cortex-M stage: {floats['imxrt700'] - floats['imxrt700cm']}")


if __name__ == "__main__":
    main()

"""Common model idioms a user's network meets: which run on the NPU, and why the others do not.

    PYTHONPATH=src .venv/bin/python benchmarks/idioms.py [--targets imxrt700 imx93] [--only relu6 swish ...]
        [--write-docs]

Each idiom is one line of PyTorch (`F.relu6(x)`, `x.max(dim=1).values`, `x.repeat(1, 2, 1, 1)`, ...) after a 1x1
convolution of a 1x4x8x8 input (so it reads an int8 activation), lowered with `lower()` for each target. Printed per
idiom and target: "NPU" when the whole model is one partition with nothing left on the CPU, else the operators left
on the CPU with the partitioner's reason (or the error when lowering fails); then the counts per target. Prints,
never asserts; `--write-docs` puts the tables on docs/idioms.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _docs  # noqa: E402
from executorch_neutron import lower  # noqa: E402

IDIOMS = {
    # activations
    "relu6": lambda x: F.relu6(x), "clamp(0, 6)": lambda x: x.clamp(0, 6), "clamp(min=0)": lambda x: x.clamp(min=0),
    "hardtanh": lambda x: F.hardtanh(x), "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "x * sigmoid(x)": lambda x: x * torch.sigmoid(x), "silu": lambda x: F.silu(x), "hardswish": lambda x: F.hardswish(x),
    "gelu(tanh)": lambda x: F.gelu(x, approximate="tanh"), "tanh": lambda x: torch.tanh(x),
    "sigmoid": lambda x: torch.sigmoid(x), "mish": lambda x: F.mish(x), "softplus": lambda x: F.softplus(x),
    "selu": lambda x: F.selu(x), "celu": lambda x: F.celu(x), "elu": lambda x: F.elu(x),
    "hardshrink": lambda x: F.hardshrink(x), "softsign": lambda x: F.softsign(x), "tanhshrink": lambda x: F.tanhshrink(x),
    "abs": lambda x: x.abs(), "exp": lambda x: torch.exp(x), "log(|x| + 1)": lambda x: torch.log(x.abs() + 1),
    "sqrt(|x| + 1)": lambda x: torch.sqrt(x.abs() + 1), "reciprocal": lambda x: torch.reciprocal(x.abs() + 1),
    "sin": lambda x: torch.sin(x), "erf": lambda x: torch.erf(x), "sign": lambda x: torch.sign(x),
    "where(x > 0, x, 0.1 x)": lambda x: torch.where(x > 0, x, 0.1 * x), "dropout (eval)": lambda x: F.dropout(x, 0.1, False),
    # arithmetic
    "x * 2": lambda x: x * 2, "x + 1": lambda x: x + 1, "1 - x": lambda x: 1 - x, "x * 0.5": lambda x: x * 0.5,
    "x / 3": lambda x: x / 3, "x ** 2": lambda x: x ** 2, "-x * 2": lambda x: -x * 2,
    "minimum": lambda x: torch.minimum(x, x * 0.5), "addcmul": lambda x: torch.addcmul(x, x, x, value=0.5),
    "lerp": lambda x: torch.lerp(x, x * 2, 0.3), "x * rsqrt(mean(x^2))": lambda x: x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-5),
    # reductions
    "mean((2, 3))": lambda x: x.mean((2, 3)), "mean keepdim": lambda x: x.mean((-1, -2), keepdim=True),
    "sum(-1)": lambda x: x.sum(-1), "sum(1)": lambda x: x.sum(1), "amax(1)": lambda x: x.amax(1),
    "max(dim=1).values": lambda x: x.max(dim=1).values, "max(x, 1, keepdim)[0]": lambda x: torch.max(x, 1, keepdim=True)[0],
    "min(-1)[0]": lambda x: x.min(-1)[0], "x.min()": lambda x: x.min(), "x.var(1)": lambda x: x.var(1, keepdim=True),
    "x.std((2, 3))": lambda x: x.std((2, 3)), "x.norm(dim=1)": lambda x: x.norm(dim=1),
    "logsumexp": lambda x: torch.logsumexp(x, -1), "argmax": lambda x: x.argmax(1).float(),
    "topk values": lambda x: x.topk(2, 1).values, "sort values": lambda x: x.sort(1).values, "cumsum": lambda x: x.cumsum(3),
    # softmax and normalization
    "softmax(-1)": lambda x: torch.softmax(x, -1), "softmax(1)": lambda x: torch.softmax(x, 1),
    "log_softmax": lambda x: F.log_softmax(x, -1), "softmin": lambda x: F.softmin(x, -1),
    "layer_norm((8, 8))": lambda x: F.layer_norm(x, (8, 8)), "group_norm(2)": lambda x: F.group_norm(x, 2),
    "instance_norm": lambda x: F.instance_norm(x), "x - mean(1)": lambda x: x - x.mean(1, keepdim=True),
    "glu(1)": lambda x: F.glu(x, 1),
    # shapes and data movement
    "flatten(1)": lambda x: torch.flatten(x, 1), "view(N, -1)": lambda x: x.view(x.size(0), -1),
    "reshape(-1)": lambda x: x.reshape(-1), "transpose(1, 2)": lambda x: x.transpose(1, 2),
    "einsum nchw->nhwc": lambda x: torch.einsum("nchw->nhwc", x), "contiguous": lambda x: x.contiguous(),
    "float()": lambda x: x.float(), "pad": lambda x: F.pad(x, (1, 1, 1, 1)),
    "chunk + cat": lambda x: torch.cat(x.chunk(2, 1)[::-1], 1), "sum(split)": lambda x: sum(torch.split(x, 2, 1)),
    "x[:, :, ::2]": lambda x: x[:, :, ::2], "narrow": lambda x: x.narrow(3, 1, 4), "x[:, [0, 2]]": lambda x: x[:, [0, 2]],
    "index_select": lambda x: torch.index_select(x, 1, torch.tensor([3, 1])),
    "repeat": lambda x: x.repeat(1, 2, 1, 1), "tile": lambda x: x.tile((1, 1, 2, 1)),
    "repeat_interleave": lambda x: x.repeat_interleave(2, dim=1), "expand_as + x": lambda x: x.mean(1, keepdim=True).expand_as(x) + x,
    "x + mean((2, 3))": lambda x: x + x.mean((2, 3), keepdim=True), "zeros_like + x": lambda x: torch.zeros_like(x) + x,
    "unbind + stack": lambda x: torch.stack(x.unbind(1)[::-1], 1), "roll": lambda x: torch.roll(x, 1, 3),
    "flip": lambda x: torch.flip(x, (3,)), "pixel_shuffle": lambda x: F.pixel_shuffle(x, 2),
    "channel shuffle": lambda x: x.view(1, 2, 2, 8, 8).transpose(1, 2).reshape(1, 4, 8, 8),
    "x @ x^T": lambda x: x @ x.transpose(-1, -2),
    "bmm": lambda x: torch.matmul(x.flatten(2), x.flatten(2).transpose(1, 2)),
    # pooling and resizing
    "max_pool2d(2)": lambda x: F.max_pool2d(x, 2), "avg_pool2d(2)": lambda x: F.avg_pool2d(x, 2),
    "adaptive_avg_pool2d(2)": lambda x: F.adaptive_avg_pool2d(x, 2), "adaptive_max_pool2d(2)": lambda x: F.adaptive_max_pool2d(x, 2),
    "interpolate nearest 2x": lambda x: F.interpolate(x, scale_factor=2),
    "interpolate bilinear 0.5x": lambda x: F.interpolate(x, scale_factor=0.5, mode="bilinear"),
    "batch_norm (computed stats)": lambda x: F.batch_norm(x, torch.zeros(4), torch.ones(4)),
}


class ConvThen(nn.Module):
    def __init__(self, idiom):
        super().__init__()
        self.conv, self.idiom = nn.Conv2d(4, 4, 1), idiom

    def forward(self, x):
        return self.idiom(self.conv(x))


def verdict(idiom, target: str) -> str:
    torch.manual_seed(0)
    x = (torch.randn(1, 4, 8, 8),)
    try:
        result = lower(ConvThen(idiom).eval(), x, [x, (torch.randn(1, 4, 8, 8),)], target=target)
    except Exception as exc:  # noqa: BLE001 - a failure is a figure
        return f"fails: {type(exc).__name__}: {' '.join(str(exc).split())[:140]}"
    report = result.report
    if len(report.partitions) == 1 and not report.rejections:
        return "NPU"
    left = sorted({f"{r.op.removeprefix('aten.')}: {r.reason[:90]}" for r in report.rejections})
    return f"{len(report.partitions)} partition(s); CPU: " + "; ".join(left[:2]) + (" ..." if len(left) > 2 else "")


def main() -> None:
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["imxrt700", "imx93"])
    parser.add_argument("--only", nargs="+", default=None, help="idiom names (default: all)")
    _docs.add_argument(parser)
    args = parser.parse_args()
    names = [n for n in IDIOMS if args.only is None or n in args.only]
    rows = []
    for i, name in enumerate(names):
        rows.append([name] + [verdict(IDIOMS[name], t) for t in args.targets])
        print(f"  [{i + 1}/{len(names)}] {name}: " + " | ".join(rows[-1][1:]), file=sys.stderr, flush=True)
    with _docs.figures(args, "benchmarks/idioms.py", "idioms", "Common model idioms on the NPU"):
        print("| target | on the NPU | partly or wholly on the CPU | lowering fails |")
        print("|---|---|---|---|")
        for j, target in enumerate(args.targets):
            cells = [r[j + 1] for r in rows]
            npu, fails = cells.count("NPU"), sum(c.startswith("fails") for c in cells)
            print(f"| {target} | {npu} of {len(cells)} | {len(cells) - npu - fails} | {fails} |")
        print()
        print("| idiom (after a 1x1 convolution) | " + " | ".join(args.targets) + " |")
        print("|---" * (len(args.targets) + 1) + "|")
        for row in rows:
            print("| `" + row[0] + "` | " + " | ".join(c.replace("|", "\\|") for c in row[1:]) + " |")


if __name__ == "__main__":
    main()

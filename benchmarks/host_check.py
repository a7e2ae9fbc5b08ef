"""What lower()'s host check costs per lowering: the finished .pte run once on the host in a child process.

    .venv/bin/python benchmarks/host_check.py [--repeat 5]

Per model (a conv + ReLU, a small CNN, an attention block): the seconds of lower() with the check and without it
(its `timings["host_check"]`, the stage of its own), and the parts of the check's cost: one run of the .pte in
this process (`runtime.run(..., isolated=False)`), one in a forked child (`isolated=True`, what the check does),
and a bare fork that runs nothing (the floor of the child process). Medians over `--repeat` runs. For scale:
starting a fresh Python that imports torch and ExecuTorch, which a worker started per check would pay, is also
timed once. Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def _models():
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, dim=32, heads=2):
            super().__init__()
            self.heads, self.qkv, self.proj = heads, nn.Conv2d(dim, 3 * dim, 1), nn.Conv2d(dim, dim, 1)

        def forward(self, x):
            b, c, h, w = x.shape
            q, k, v = self.qkv(x).view(b, self.heads, 3 * c // self.heads, h * w).chunk(3, dim=2)
            attn = ((q.transpose(-2, -1) @ k) * 0.25).softmax(-1)
            return self.proj((v @ attn.transpose(-2, -1)).view(b, c, h, w))

    return {
        "conv_relu": (nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()), torch.randn(1, 3, 16, 12)),
        "small_cnn": (nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2),
                                    nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)),
                      torch.randn(1, 3, 32, 32)),
        "attention": (Attention(), torch.randn(1, 32, 5, 5)),
    }


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bare_fork() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    import logging

    import torch

    from executorch_neutron import lower
    from executorch_neutron.runtime import run

    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    torch.manual_seed(0)
    print(f"{'model':<11} {'lower+check':>11} {'lower':>7} {'check':>7} {'in-process':>10} {'child':>7} "
          f"{'bare fork':>9}  (seconds, median of {args.repeat})")
    for name, (model, x) in _models().items():
        model.eval()
        with_check = [lower(model, (x,), [(x,)]) for _ in range(args.repeat)]
        t_with = statistics.median(sum(r.timings.values()) for r in with_check)
        check = statistics.median(r.timings["host_check"] for r in with_check)
        t_without = statistics.median(sum(lower(model, (x,), [(x,)], host_check=False).timings.values())
                                      for _ in range(args.repeat))
        pte = with_check[0].pte
        in_process = _median(lambda: run(pte, [x], isolated=False), args.repeat)
        child = _median(lambda: run(pte, [x]), args.repeat)
        fork = _median(_bare_fork, args.repeat)
        print(f"{name:<11} {t_with:>11.3f} {t_without:>7.3f} {check:>7.3f} {in_process:>10.3f} {child:>7.3f} "
              f"{fork:>9.3f}")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch, executorch.runtime"], check=True, capture_output=True)
    print(f"a fresh Python importing torch and executorch.runtime: {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

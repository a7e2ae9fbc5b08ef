"""Host runtime overhead: a MobileNetV2-style .pte through the host runtime vs its TFLite in LiteRT alone.

Prints, from one run, the median seconds per inference of
  (a) the .pte executed by the stock ExecuTorch runtime with the host NeutronBackend (quantize on the CPU,
      the delegate call into LiteRT's reference kernels, dequantize on the CPU), and
  (b) the partition's TFLite executed directly in LiteRT (reference kernels, already-quantized input),
and the ratio a/b. No pass/fail: the figures are for reading.

    python benchmarks/host_runtime.py [--resolution 64] [--repeats 20] [--write-docs]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _docs  # noqa: E402
from _timing import median_seconds  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=20)
    _docs.add_argument(parser)
    args = parser.parse_args()
    with _docs.figures(args, "benchmarks/host_runtime.py", "host_runtime", "Host runtime overhead"):
        _measure(args)


def _measure(args) -> None:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from executorch_neutron import lower
    from executorch_neutron.core.payload import unpack
    from executorch_neutron.runtime import load
    from executorch_neutron.models.zoo import calibration, mobilenet_v2_like

    model, inputs = mobilenet_v2_like(resolution=args.resolution)
    t0 = time.perf_counter()
    result = lower(model, inputs, calibration(inputs, 8))
    lower_s = time.perf_counter() - t0
    print(result.report.summary_line())

    program = load(result.pte)
    pte_s = median_seconds(lambda: program.execute(inputs), args.repeats)

    payloads = [unpack(b) for b in result.payloads.values()]
    biggest = max(payloads, key=lambda p: len(p.tflite))
    interp = Interpreter(model_content=biggest.tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    feeds = [(d["index"], np.zeros(d["shape"], d["dtype"])) for d in interp.get_input_details()]

    def litert_once():
        for index, value in feeds:
            interp.set_tensor(index, value)
        interp.invoke()
        for d in interp.get_output_details():
            interp.get_tensor(d["index"])

    litert_s = median_seconds(litert_once, args.repeats)
    print(f"model: mobilenet_v2_like {args.resolution}x{args.resolution}, {len(payloads)} partition(s), "
          f".pte {len(result.pte) / 1e6:.2f} MB, lowered in {lower_s:.1f} s")
    print(f"(a) .pte via host runtime     : {pte_s:.4f} s/inference (median of {args.repeats})")
    print(f"(b) TFLite in LiteRT alone     : {litert_s:.4f} s/inference (largest partition, reference kernels)")
    print(f"ratio a/b                      : {pte_s / litert_s:.3f}")


if __name__ == "__main__":
    main()

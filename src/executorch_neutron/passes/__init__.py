"""ATen rewrites the quantizer runs before annotation, one pass per module, in the one ordered list of
`pipeline.PIPELINE` (`run_passes`). Each rewrite makes an op the NPU runs out of one it would leave on the CPU,
computing the same values, so PyTorch's quantized model of the rewritten graph is the reference."""

from .pipeline import PIPELINE, PassContext, Step, run_passes

__all__ = ["PIPELINE", "PassContext", "Step", "run_passes"]

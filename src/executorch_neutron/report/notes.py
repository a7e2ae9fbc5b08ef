"""Fixed sentences the report renderers print next to their figures (so every format says the same)."""

MEMORY_NOTE = ("estimate: int8 weights of all partitions + the largest working set of one NPU operator (its input "
               "and output activations); the Neutron converter's real placement, scratch and alignment differ")

REQUANTIZE_NOTE = ("dequantize -> quantize with new parameters, on the CPU between partitions; it comes from the "
                   "quantized model (an op with fixed output parameters feeding one with shared parameters)")

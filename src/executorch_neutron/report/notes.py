"""Fixed sentences the report renderers print next to their figures (so every format says the same)."""

FORMAT_NOTE = ("as given: the partition takes and returns ExecuTorch's channels-first tensors and transposes "
               "inside, on the NPU (use_neutron_for_format_conversion=True, the default); channels-last (NHWC): the "
               "partition "
               "takes or gives NHWC: a tensor the model keeps channels-last (model.to(memory_format=torch."
               "channels_last) with channels-last inputs) passes as it is, with no transpose anywhere; a contiguous "
               "one is transposed on the CPU at that boundary (use_neutron_for_format_conversion=False)")

REQUANTIZE_NOTE = ("dequantize -> quantize with new parameters, on the CPU between partitions; it comes from the "
                   "quantized model (an op with fixed output parameters feeding one with shared parameters)")

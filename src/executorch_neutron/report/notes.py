"""Fixed sentences the report renderers print next to their figures (so every format says the same)."""

MEMORY_NOTE = ("estimate: int8 weights of all partitions + the largest working set of one NPU operator (its input "
               "and output activations); the NPU compiler's real placement, scratch and alignment differ")

FORMAT_NOTE = ("as given: the partition takes and returns ExecuTorch's channels-first tensors and transposes "
               "inside, on the NPU (use_neutron_for_format_conversion=True, the default); channels-last (NHWC): the "
               "partition "
               "takes or gives NHWC: a tensor the model keeps channels-last (model.to(memory_format=torch."
               "channels_last) with channels-last inputs) passes as it is, with no transpose anywhere; a contiguous "
               "one is transposed on the CPU at that boundary (use_neutron_for_format_conversion=False)")

REQUANTIZE_NOTE = ("dequantize -> quantize with new parameters, on the CPU between partitions; it comes from the "
                   "quantized model (an op with fixed output parameters feeding one with shared parameters)")

NEUTRON_ESTIMATE_NOTE = ("Neutron estimate: a model of this package, not NXP's and not a measurement (NXP publishes no "
                         "cost model; with the eIQ Neutron SDK installed, the converter's own figures replace it)")

#: the estimate held against NXP's published figure (benchmarks/neutron_estimate.py prints it; a test recomputes it)
NEUTRON_CALIBRATION_NOTE = ("held against NXP's published figure: MLPerf Tiny's anomaly-detection autoencoder takes "
                            "0.797 ms on the MCX N94x NPU; this estimate gives 0.454 ms for it on mcxn94x "
                            "(measured / estimate = 1.75: the estimate is optimistic, read it as a lower bound and "
                            "its per-layer shares as the useful part)")

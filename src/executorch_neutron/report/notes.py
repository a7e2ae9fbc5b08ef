"""Fixed sentences the report renderers print next to their figures (so every format says the same)."""

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

#: the estimate held against NXP's published figures (benchmarks/neutron_estimate.py prints them; a test recomputes
#: the expected error from neutron/estimate.py's EXPECTED_ERROR and the ratios from a fresh estimate)
NEUTRON_CALIBRATION_NOTE = ("held against NXP's published i.MX RT700 latencies (CifarNet 848 us, DS-CNN-S 576-595 us, "
                            "MobileNetV1 0.25 128x128 2,759 us; its two fitted figures, depthwise MACs per cycle and "
                            "the cost per kernel, come from them): expected error +-11% (the largest leave-one-out "
                            "error of that fit) in total, per-layer shares unmeasured; on the MCX N94x (N1-16, figures not fitted) "
                            "MLPerf Tiny's anomaly-detection autoencoder takes 0.797 ms where this estimate gives "
                            "0.486 ms (published / estimate = 1.64): read N1 figures as optimistic")

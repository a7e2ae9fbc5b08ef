"""ExecuTorch's Cortex-M backend as the second engine of an SoC target (`imxrt700cm`): the NPU's leftovers as
int8 CMSIS-NN kernels (`stage.py`); the wheel's backend is loaded by `wheel.py`."""

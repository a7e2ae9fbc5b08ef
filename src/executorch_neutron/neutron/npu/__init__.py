"""NPU compile step: partition TFLite -> delegate payload (device microcode via the eIQ Neutron SDK, or host reference)."""

from .compile import HOST_REFERENCE, NEUTRON_MICROCODE, CompiledPartition, compile_partition
from .errors import ConvertedModelError, NeutronCompileError, NeutronConverterCrash
from .sdk_adapter import sdk_available

__all__ = [
    "HOST_REFERENCE",
    "NEUTRON_MICROCODE",
    "CompiledPartition",
    "ConvertedModelError",
    "NeutronCompileError",
    "NeutronConverterCrash",
    "compile_partition",
    "sdk_available",
]

"""The graph walk that turns one partition's edge program into an int8 TFLite flatbuffer.

This stage sits between the backend and the operator registry: `program.convert_program` visits the partition's
nodes in order and calls each node's registry converter with a `context.ConversionContext` (which TFLite tensor holds
each node's value, in which layout). The registry's converters (ops/) emit through tflite/, a pure flatbuffer writer
that knows nothing of graphs or of the registry.
"""

from .context import ConversionContext, ConversionError
from .program import ConvertedPartition, convert_partition, convert_program

__all__ = ["ConversionContext", "ConversionError", "ConvertedPartition", "convert_partition", "convert_program"]

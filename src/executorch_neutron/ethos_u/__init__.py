"""The Arm Ethos-U back end (i.MX 93's Ethos-U65, any Ethos-U55/U65) through Arm's Vela compiler.

It shares the front end with the Neutron back end (quantizer, passes, operator registry -> int8 TFLite through
convert/ and tflite/) and adds: Vela's operator limits (constraints.py), the Vela call (vela_call.py), the payload
ExecuTorch's Arm device runtime reads (payload.py), `EthosUBackend` (backend.py) and `EthosUPartitioner`.
"""

from .backend import EthosUBackend, reference_key, vela_flags
from .partitioner import EthosUPartitioner
from .vela_call import Estimate, VelaError

__all__ = ["EthosUBackend", "EthosUPartitioner", "Estimate", "VelaError", "reference_key", "vela_flags"]

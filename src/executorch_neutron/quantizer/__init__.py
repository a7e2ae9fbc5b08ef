"""PT2E int8 quantization for Neutron: `NeutronQuantizer` (PTQ and QAT), its specs and pattern table."""

from .neutron_quantizer import NeutronQuantizer
from .patterns import ANNOTATORS
from .qconfig import NeutronQConfig, make_qconfig

__all__ = ["NeutronQuantizer", "NeutronQConfig", "make_qconfig", "ANNOTATORS"]

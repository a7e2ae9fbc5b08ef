"""PT2E int8 quantization for Neutron: `NeutronQuantizer` (PTQ and QAT), its specs and pattern table."""

from ..target import get_target
from .composed import NeutronCortexMQuantizer
from .neutron_quantizer import NeutronQuantizer
from .patterns import ANNOTATORS
from .qconfig import NeutronQConfig, make_qconfig


def quantizer_for(target, **options):
    """The one quantizer of a target: `NeutronCortexMQuantizer` when it has a Cortex-M core for the leftovers
    (`imxrt700cm`), else `NeutronQuantizer`; options as those classes take (is_qat, per_channel, ..., precision)."""
    cls = NeutronCortexMQuantizer if get_target(target).cortex_m else NeutronQuantizer
    return cls(target, **options)


__all__ = ["NeutronQuantizer", "NeutronCortexMQuantizer", "quantizer_for", "NeutronQConfig", "make_qconfig", "ANNOTATORS"]

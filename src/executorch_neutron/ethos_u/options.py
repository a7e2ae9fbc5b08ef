"""The Ethos-U back end's view of a `NeutronCompileSpec`: Vela's flags and what the .pte carries.

The spec holds every option of a lowering (compile_spec.py, parsed once); this view is the part the Ethos-U back
end reads: the target (with `system_config` / `memory_mode` / `config_ini` applied, fields tagged `kind=ETHOS_U`
there), `extra_flags` for Vela, and `embed_reference`. backend.py and plugin.py read options only through it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compile_spec import NeutronCompileSpec
from ..target import EthosUTarget


@dataclass(frozen=True)
class EthosUOptions:
    """target: the Ethos-U target with the spec's Vela configuration applied.
    extra_flags: Vela flags given verbatim; one replaces the target's flag of the same name.
    embed_reference: also store each partition's int8 TFLite in the .pte for the host runtime."""

    target: EthosUTarget
    extra_flags: str
    embed_reference: bool

    @classmethod
    def of(cls, spec: NeutronCompileSpec) -> "EthosUOptions":
        return cls(spec.target_info, spec.extra_flags, spec.embed_reference)

    @property
    def vela_flags(self) -> list[str]:
        """Vela's arguments (without output dir and input path): the target's, then `extra_flags`; an extra flag
        replaces the target's flag of the same name."""
        extra = self.extra_flags.split()
        given = {f.split("=", 1)[0] for f in extra}
        return [f for f in self.target.vela_flags if f.split("=", 1)[0] not in given] + extra

    @property
    def core_clock_hz(self) -> float:
        return self.target.core_clock_hz

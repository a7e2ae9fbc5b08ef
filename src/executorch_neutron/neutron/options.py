"""The Neutron back end's view of a `NeutronCompileSpec`: the options its NPU compile step reads.

The spec holds every option of a lowering (compile_spec.py, parsed once); this view is the part of it the
Neutron back end owns (fields tagged `kind=NEUTRON` there) plus the front-end options the compile step needs.
`neutron/npu/` reads options only through it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compile_spec import NeutronCompileSpec


@dataclass(frozen=True)
class NeutronOptions:
    """converter_target: the eIQ Neutron converter's `target` name of the spec's target.
    reference: force the host-reference payload even with the SDK installed.
    use_profiling, fetch_constants_to_sram, dump_kernel_selection_code, extra_flags: the converter's options (SDK only).
    intermediates_dir: where the converter's dumps are kept (None: nowhere)."""

    converter_target: str
    reference: bool
    use_profiling: bool
    fetch_constants_to_sram: bool
    dump_kernel_selection_code: bool
    extra_flags: str
    intermediates_dir: str | None

    #: converter-only options and their "off" values: they cannot act on a host-reference payload
    CONVERTER_ONLY = {"extra_flags": "", "fetch_constants_to_sram": False, "dump_kernel_selection_code": False,
                      "use_profiling": False}

    @classmethod
    def of(cls, spec: NeutronCompileSpec) -> "NeutronOptions":
        return cls(spec.target_info.converter_target, spec.reference, spec.use_profiling, spec.fetch_constants_to_sram,
                   spec.dump_kernel_selection_code, spec.extra_flags, spec.intermediates_dir)

    def unused_without_converter(self) -> tuple[str, ...]:
        """The converter-only options set here, which a host-reference payload cannot honour."""
        return tuple(n for n, off in self.CONVERTER_ONLY.items() if getattr(self, n) != off)

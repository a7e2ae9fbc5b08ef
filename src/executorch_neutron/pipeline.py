"""The one assembly of the lowering pipeline: quantize -> partition -> (Cortex-M leftovers) -> to_executorch.

`lower()` (and so the CLI, `compare()` and the examples) and the ExecuTorch export recipes (`recipes.py`) take
their stages from here: one rule for `spec` vs `target` (`resolve_spec`), then `assemble(spec)` gives the
quantizer, the partitioner, the edge compile config and the Cortex-M leftover step of that target. Both flows
therefore give the same .pte bytes for the same model, options and calibration data (tests/test_recipes.py).

A second back end plugs in at `assemble`: it picks the quantizer, partitioner and leftover step from the target.
"""

from __future__ import annotations

from dataclasses import dataclass

from .backends import partitioner_for
from .compile_spec import NeutronCompileSpec
from .cortex_m.stage import (
    cortex_m_core,
    edge_compile_config,
    lower_leftovers,
    prepare_leftovers,
)
from .partition.support import resolve_excluded
from .quantizer import quantizer_for
from .target import get_target

DEFAULT_TARGET = "imxrt700"


class LoweringError(RuntimeError):
    """The model could not be lowered; the message says what was wrong and what to do."""


def resolve_spec(target: str | None = None, spec: NeutronCompileSpec | None = None,
                 **spec_options) -> NeutronCompileSpec:
    """The compile spec of a lowering: `spec`, or one built for `target` (default imxrt700), with `spec_options`
    applied and excluded operators in their one spelling. A `target` different from `spec.target` is an error."""

    if spec is None:
        spec = NeutronCompileSpec.coerce(None, target=target or DEFAULT_TARGET, **spec_options)
    else:
        if target is not None and get_target(target).name != spec.target:
            raise LoweringError(f"target {target!r} conflicts with spec.target {spec.target!r}: pass one of them")
        spec = spec.replace(**spec_options) if spec_options else spec
    try:
        return spec.replace(operators_not_to_delegate=resolve_excluded(spec.operators_not_to_delegate))
    except ValueError as exc:
        raise LoweringError(str(exc)) from None


@dataclass
class Pipeline:
    """The stages of one lowering, built for one resolved spec."""

    spec: NeutronCompileSpec
    quantizer: object  # a PT2E Quantizer (NeutronQuantizer, or NeutronCortexMQuantizer with a Cortex-M core)
    partitioner: object  # NeutronPartitioner or EthosUPartitioner (backends.partitioner_for)
    edge_compile_config: object  # EdgeCompileConfig of to_edge_transform_and_lower, None for ExecuTorch's default

    @property
    def cortex_m_core(self) -> str | None:
        return cortex_m_core(self.spec)

    def _cpu_nodes(self) -> list[str]:
        return [r.node for r in self.partitioner.rejections]

    def lower_leftovers(self, edge):
        """After partitioning: (edge, Leftovers) with the leftovers as int8 Cortex-M kernels; (edge, None) on a
        target without a Cortex-M core."""
        if not self.cortex_m_core:
            return edge, None

        return lower_leftovers(edge, self.spec, self._cpu_nodes())

    def edge_transforms(self) -> list | None:
        """The Cortex-M step as a recipe's EDGE_PROGRAM_MANAGER_TRANSFORM (None without a Cortex-M core)."""
        if not self.cortex_m_core:
            return None

        def cortex_m_leftovers(edge):
            return prepare_leftovers(edge, self.spec, self._cpu_nodes())[0]

        return [cortex_m_leftovers]


def assemble(spec: NeutronCompileSpec, quantizer=None, **quantizer_options) -> Pipeline:
    """The pipeline of a resolved spec; `quantizer` replaces the target's own (`quantizer_for(target,
    **quantizer_options)`: is_qat, per_channel, observer, modules_to_skip)."""

    partitioner = partitioner_for(spec)  # a ValueError names an option the target's back end cannot honour
    return Pipeline(
        spec=spec,
        quantizer=quantizer if quantizer is not None else quantizer_for(spec.target, constraints=spec.constraints,
                                                                         **quantizer_options),
        partitioner=partitioner,
        edge_compile_config=edge_compile_config(spec),
    )

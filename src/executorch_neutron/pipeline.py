"""The one assembly of the lowering pipeline: quantize -> partition -> (Cortex-M leftovers) -> fold -> to_executorch.

`lower()` (and so the CLI, `compare()` and the examples) and the ExecuTorch export recipes (`recipes.py`) take
their stages from here: one rule for `spec` vs `target` (`resolve_spec`), then `assemble(spec)` gives the
quantizer, the partitioner, the edge compile config and the Cortex-M leftover step of that target. Both flows
therefore give the same .pte bytes for the same model, options and calibration data (tests/test_recipes.py).

A second back end plugs in at `assemble`: it picks the quantizer, partitioner and leftover step from the target.

Quantized I/O (`assemble(..., quantized_io=True)`): after partitioning, ExecuTorch's own I/O passes
(`executorch.exir.passes.quantize_io_pass`) drop the program's first quantize of each input and last dequantize of
each output, so the .pte takes and returns the int8 (int16) tensors, in the layout its float I/O had; their qparams
are stored in the .pte as ExecuTorch's constant methods (`forward_input0_scale`, ...; `pte.io_qparams` reads them).
"""

from __future__ import annotations

from dataclasses import dataclass

from .backends import partitioner_for
from .compile_spec import NeutronCompileSpec
from .core.cpu_constants import FoldCpuConstants
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


class PrecisionRuleError(LoweringError):
    """A precision setting the model or the target cannot take: a misspelt module, int16 on an int8-only target."""


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
    quantized_io: bool = False  # the .pte takes and returns the quantized tensors (quantize_io)

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

    def io_step(self, edge):
        """After partitioning, before the Cortex-M step: the quantized I/O step when asked for, else `edge`."""
        return edge.transform(quantize_io_passes(edge)) if self.quantized_io else edge

    def fold_step(self, edge):
        """Last, after the Cortex-M step: the CPU's computations on constants folded (`core/cpu_constants.py`: a
        float linear's weight transpose is stored transposed instead of computed at every inference)."""
        return edge.transform([FoldCpuConstants()])

    def edge_transforms(self) -> list:
        """The quantized I/O step, the Cortex-M step and the constant fold as a recipe's edge-manager transforms
        (each returns the passes ExecuTorch then applies), in `lower()`'s order."""
        steps = [quantize_io_passes] if self.quantized_io else []
        if self.cortex_m_core:
            def cortex_m_leftovers(edge):
                return prepare_leftovers(edge, self.spec, self._cpu_nodes())[0]

            steps.append(cortex_m_leftovers)
        steps.append(lambda edge: [FoldCpuConstants()])
        return steps


def assemble(spec: NeutronCompileSpec, quantizer=None, quantized_io: bool = False,
             **quantizer_options) -> Pipeline:
    """The pipeline of a resolved spec; `quantizer` replaces the target's own (`quantizer_for(target,
    **quantizer_options)`: is_qat, per_channel, observer, modules_to_skip, precision); `quantized_io`: the .pte
    takes and returns the quantized tensors."""

    given = {k for k, v in quantizer_options.items() if v not in (None, (), [], False)}
    if quantizer is not None and given:
        raise LoweringError(f"{', '.join(sorted(given))} configure the target's own quantizer, but a quantizer was "
                            f"given: set them on that quantizer (e.g. quantizer.set_precision(...)) or drop quantizer=")
    partitioner = partitioner_for(spec)  # a ValueError names an option the target's back end cannot honour
    try:
        quantizer = quantizer if quantizer is not None else quantizer_for(spec.target, constraints=spec.constraints,
                                                                          **quantizer_options)
    except ValueError as exc:  # an int16 precision on an int8-only target, a bad precision text
        raise PrecisionRuleError(str(exc)) from None
    return Pipeline(spec=spec, quantizer=quantizer, partitioner=partitioner,
                    edge_compile_config=edge_compile_config(spec), quantized_io=quantized_io)


def _reader(node) -> str:
    """A node as a user reads it in a message: 'aten.convolution.default (conv2d)'."""
    from .core.exported import op_name

    return f"{op_name(node.target)} ({node.name})" if node.op == "call_function" else node.name


def quantize_io_passes(edge) -> list:
    """ExecuTorch's passes that give `edge` quantized I/O (see the module docstring); a LoweringError names an
    input that no quantize node reads first (or an output no dequantize node gives), e.g. one kept float."""
    from executorch.exir.dialects._ops import ops as exir_ops
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs

    program = edge.exported_program()
    graph = program.graph_module.graph
    quantize = exir_ops.edge.quantized_decomposed.quantize_per_tensor.default
    dequantize = exir_ops.edge.quantized_decomposed.dequantize_per_tensor.default
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    inputs = [placeholders[name] for name in program.graph_signature.user_inputs]
    for i, node in enumerate(inputs):
        users = list(node.users)
        if len(users) != 1 or users[0].target != quantize:
            raise LoweringError(f"quantized_io: input {i} ({node.name}) is read by "
                                f"{', '.join(_reader(u) for u in users) or 'nothing'}, not by one quantize node: "
                                f"keep its first operator quantized (not float in the precision config), or lower "
                                f"without quantized I/O")
    outputs = list(graph.output_node().args[0])
    for i, node in enumerate(outputs):
        if getattr(node, "target", None) != dequantize:
            raise LoweringError(f"quantized_io: output {i} ({getattr(node, 'name', node)}) is not given by a "
                                f"dequantize node ({_reader(node) if hasattr(node, 'target') else 'a constant'}): keep its last operator "
                                f"quantized (not float in the precision config), or lower without quantized I/O")
    return [QuantizeInputs(edge, list(range(len(inputs))), method_name="forward"),
            QuantizeOutputs(edge, list(range(len(outputs))), method_name="forward")]

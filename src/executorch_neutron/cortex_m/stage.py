"""The Cortex-M stage of the lowering: after Neutron partitioning, the leftovers become int8 `cortex_m::*` kernels.

For a target with a Cortex-M core (`NeutronTarget.cortex_m`, e.g. `imxrt700cm`) the pipeline is:

    quantize once (NeutronCortexMQuantizer) -> export -> to_edge_transform_and_lower(NeutronPartitioner,
    edge_compile_config(spec)) -> edge.transform(leftover_passes(spec)) -> to_executorch

`leftover_passes` is one ExportedProgram pass that runs the wheel's `CortexMPassManager` (Q/DQ folding,
activation fusion, aten -> cortex_m rewrites, scratch buffers) for the configured core; `prepare_leftovers` first
keeps float the CPU nodes those passes cannot rewrite. Nodes inside Neutron delegates are untouched (they are not
in the top-level graph). `lower()` (through `lower_leftovers`) and the export recipes both use these functions,
so they produce the same program.

`classify` tells, per node the partitioner left on the CPU, which `cortex_m::*` kernel it became (matched by
ExecuTorch debug handle, which the Cortex-M passes carry over) or that it stayed a float op.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from dataclasses import dataclass, field

import torch
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult

from ..compile_spec import NeutronCompileSpec
from ..core.messages import first_line
from ..ops.registry import op_name
from ..partition.support import is_compute

_log = logging.getLogger("executorch_neutron")

#: Kernels that only move data between float and int8 at the program boundary (not compute).
BOUNDARY_KERNELS = frozenset({"cortex_m.quantize_per_tensor", "cortex_m.dequantize_per_tensor"})


def cortex_m_core(spec: NeutronCompileSpec) -> str | None:
    """The Cortex-M core that runs the leftovers (`cortex-m33`), or None for a Neutron-only target."""
    return spec.target_info.cortex_m


def edge_compile_config(spec: NeutronCompileSpec):
    """The EdgeCompileConfig of `to_edge_transform_and_lower`: the Cortex-M backend's (it keeps linear,
    hardswish, hardsigmoid and silu whole) for a target with a Cortex-M core, else None (ExecuTorch's default)."""
    if cortex_m_core(spec) is None:
        return None
    from . import wheel

    wheel.load()
    from executorch.backends.cortex_m.edge_compile_config import (
        cortex_m_edge_compile_config,
    )

    return cortex_m_edge_compile_config()


def _target_config(core: str):
    from . import wheel

    wheel.load()
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig

    return CortexMTargetConfig.from_target_string(core)


class CortexMLeftoversPass(ExportedProgramPassBase):
    """Run ExecuTorch's Cortex-M pass manager on a (partitioned) edge program for one Cortex-M core."""

    def __init__(self, core: str) -> None:
        self.core = core
        self.target_config = _target_config(core)

    def call(self, exported_program) -> ExportedProgramPassResult:
        from executorch.backends.cortex_m.passes.cortex_m_pass_manager import (
            CortexMPassManager,
        )

        with _without_pass_manager_deprecation():
            out = CortexMPassManager(exported_program, target_config=self.target_config).transform()
        _restore_delegate_input_order(out.graph_module)
        return ExportedProgramPassResult(out, True)

    def __repr__(self) -> str:
        return f"CortexMLeftoversPass({self.core!r})"


class _DropPassManagerDeprecation(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("PassManager is deprecated")


@contextlib.contextmanager
def _without_pass_manager_deprecation():
    """ExecuTorch's Cortex-M pass manager builds its passes on the deprecated `exir.PassManager`, which logs "PassManager
    is deprecated. Please use ExportedProgramPassManager instead." at every construction: a note to ExecuTorch's
    own code, none to our users. Only that record of that logger is dropped, and only during this call."""
    logger, drop = logging.getLogger("executorch.exir.pass_manager"), _DropPassManagerDeprecation()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _restore_delegate_input_order(gm) -> None:
    """The Cortex-M kernels leave their results channels-last (NHWC dim order); a delegate compiled for a
    contiguous input gets a dim-order copy in front of it (a portable int8 copy), so it reads what it was
    compiled for (the Neutron payload's format flags say which layout each input has)."""
    from executorch.exir.dialects._ops import ops as exir_ops

    copy_op = exir_ops.edge.dim_order_ops._to_dim_order_copy.default
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or getattr(node.target, "__name__", "") != "executorch_call_delegate":
            continue
        lowered = getattr(gm, node.args[0].target, None)
        program = getattr(lowered, "original_module", None)
        if program is None:
            continue
        expected = [p.meta.get("val") for p in program.graph.nodes
                    if p.op == "placeholder" and p.name in program.graph_signature.user_inputs]
        args = list(node.args)
        for i, (arg, want) in enumerate(zip(args[1:], expected), start=1):
            have = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
            if not isinstance(have, torch.Tensor) or not isinstance(want, torch.Tensor):
                continue
            if have.dim_order() == want.dim_order():
                continue
            with gm.graph.inserting_before(node):
                moved = gm.graph.call_function(copy_op, (arg,), {"dim_order": list(want.dim_order())})
            moved.meta = {k: v for k, v in arg.meta.items() if k != "val"}
            moved.meta["val"] = have.clone(memory_format=torch.channels_last if want.dim_order() == (0, 2, 3, 1)
                                           else torch.contiguous_format)
            args[i] = moved
        node.args = tuple(args)
    gm.recompile()


def leftover_passes(spec: NeutronCompileSpec) -> list:
    """The passes for `EdgeProgramManager.transform`: [] for a Neutron-only target."""
    core = cortex_m_core(spec)
    return [] if core is None else [CortexMLeftoversPass(core)]


def lower_leftovers(edge, spec: NeutronCompileSpec, cpu_nodes=()):
    """`edge` with its CPU leftovers rewritten to `cortex_m::*` kernels, and what became of each of `cpu_nodes`
    (names of the partitioner's CPU nodes); `(edge, None)` unchanged for a Neutron-only target."""
    if cortex_m_core(spec) is None:
        return edge, None
    handles = {n.meta["debug_handle"]: n.name for n in edge.exported_program().graph_module.graph.nodes
               if n.name in cpu_nodes and n.meta.get("debug_handle") is not None}  # before: passes work in place
    passes, refused = prepare_leftovers(edge, spec, cpu_nodes)
    edge = edge.transform(passes)
    out = classify(handles, edge.exported_program().graph_module, cortex_m_core(spec))
    out.refused = refused
    return edge, out


def prepare_leftovers(edge, spec: NeutronCompileSpec, cpu_nodes) -> tuple[list, dict[str, str]]:
    """The passes for `edge.transform`, after marking float the CPU nodes the Cortex-M passes cannot rewrite.

    The Cortex-M passes raise on an int8 op they cannot rewrite (per-channel linear weights, the pieces of a
    decomposed op, ...). When that happens each CPU node is tried alone on a copy; the ones that fail lose their
    "int8" mark and stay float ops (the Q/DQ around them become cortex_m quantize/dequantize), with the first
    meaningful line of the pass's error as the reason (returned: CPU node -> reason; the whole error goes to the
    debug log, `--verbose`). Used by `lower()` and by the export recipes alike.
    """
    passes = leftover_passes(spec)
    if not passes:
        return [], {}
    program = edge.exported_program()
    marked = {n.name: n for n in program.graph_module.graph.nodes if n.name in cpu_nodes and _is_marked(n)}
    failed = _passes_on_copy(program, passes) is not None
    refused = _refused_nodes(program, passes, marked) if failed else {}
    for name in refused:
        _set_mark(marked[name], False)
    if failed and (error := _passes_on_copy(program, passes)) is not None:
        # nodes that pass alone but fail together (e.g. the pieces of a decomposed op): all stay float
        for name, node in marked.items():
            refused.setdefault(name, f"together with the other CPU nodes: {error}")
            _set_mark(node, False)
    return passes, refused


def _is_marked(node) -> bool:
    from executorch.backends.arm.common.annotation_meta import ArmAnnotationInfo

    info = (node.meta.get("custom") or {}).get(ArmAnnotationInfo.CUSTOM_META_KEY)
    return bool(info and info.get("quantized"))


def _set_mark(node, quantized: bool) -> None:
    from executorch.backends.arm.common.annotation_meta import ArmAnnotationInfo

    node.meta.setdefault("custom", {})[ArmAnnotationInfo.CUSTOM_META_KEY] = ArmAnnotationInfo(quantized=quantized)


def _passes_on_copy(program, passes) -> str | None:
    """Run the Cortex-M passes on a copy of `program`: None when they succeed, else the innermost error."""

    try:
        work = copy.deepcopy(program)
        for p in passes:
            work = p.call(work).exported_program
        return None
    except Exception as exc:  # noqa: BLE001 - any failure of the wheel's passes keeps the node float
        _log.debug("ExecuTorch's Cortex-M passes failed", exc_info=exc)  # the whole text: --verbose
        while exc.__cause__ is not None or exc.__context__ is not None:
            exc = exc.__cause__ or exc.__context__
        return f"{type(exc).__name__}: {first_line(exc)}"


def _refused_nodes(program, passes, marked: dict) -> dict[str, str]:
    """Try each marked CPU node alone (the others unmarked); return the ones the passes fail on, with the error."""
    refused = {}
    for name, node in marked.items():
        for other in marked.values():
            _set_mark(other, other is node)
        error = _passes_on_copy(program, passes)
        if error is not None:
            refused[name] = error
    for node in marked.values():
        _set_mark(node, True)
    return refused


@dataclass
class Leftovers:
    """What became of the partitioner's CPU nodes in the Cortex-M stage (keyed by their names)."""

    core: str
    kernels: dict[str, str] = field(default_factory=dict)  # CPU node -> cortex_m kernel, e.g. "cortex_m.softmax"
    floats: set[str] = field(default_factory=set)  # CPU nodes still float ops (portable kernels)
    refused: dict[str, str] = field(default_factory=dict)  # CPU node -> why the Cortex-M passes could not take it

    def kernel_of(self, node: str) -> str | None:
        """The kernel a CPU node became; "fused" when it vanished into a neighbour's kernel (e.g. a relu)."""
        if node in self.floats:
            return None
        return self.kernels.get(node, FUSED)


#: A CPU node with no node of its own after the Cortex-M passes: folded into a neighbouring kernel.
FUSED = "fused"


def kernel_name(node) -> str | None:
    """`cortex_m.<op>` for a node calling a cortex_m kernel (edge or out variant), else None."""
    text = str(getattr(node, "target", ""))
    marker = "cortex_m."
    if node.op != "call_function" or marker not in text:
        return None
    return marker + text.split(marker, 1)[1].split(".", 1)[0]


def _op_name(node) -> str:
    return op_name(node.target)


def classify(handles: dict, after_gm, core: str) -> Leftovers:
    """Match CPU nodes (debug handle -> name, from the partitioned graph) to the nodes of `after_gm`."""
    out = Leftovers(core)
    for node in after_gm.graph.nodes:
        source = handles.get(node.meta.get("debug_handle"))
        if source is None or not is_compute(node):
            continue
        kernel = kernel_name(node)
        if kernel is None:
            val = node.meta.get("val")
            vals = val if isinstance(val, (tuple, list)) else (val,)
            if any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in vals):
                out.floats.add(source)
            else:  # data movement on int8 tensors (view, permute, ...): portable kernels, no float compute
                out.kernels.setdefault(source, f"{_op_name(node)} (int8)")
        elif kernel not in BOUNDARY_KERNELS:
            out.kernels.setdefault(source, kernel)
    return out

"""`lower()`: the one-call path model -> quantized -> partitioned -> .pte, returning a `LoweringResult`.

It is the ExecuTorch-native flow (export, PT2E with NeutronQuantizer, to_edge_transform_and_lower with
NeutronPartitioner, the Cortex-M leftovers where the target has that core, to_executorch), its stages taken from
`pipeline.py` (as the export recipes take theirs), with timings, progress and a delegation report around it.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import torch

from .compile_spec import NeutronCompileSpec
from .core._quiet import message_only_root_logging
from .core.atomic import replacing, write_bytes
from .core.messages import first_line
from .core.progress import listening
from .core.qdq import per_tensor_kind
from .models.loading import CALIBRATION_HINT, calibration_problem
from .pipeline import LoweringError, PrecisionRuleError, assemble, resolve_spec
from .quantizer.precision import PrecisionError
from .report import DelegationReport
from .report.memory import check_budget, memory_section, parse_size
from .runtime.validate import op_name, unregistered_operators

log = logging.getLogger("executorch_neutron")
_LOWER_LOCK = threading.Lock()  # torch.export and the PT2E passes are not thread-safe: one lower() at a time


@dataclass
class LoweringResult:
    pte: bytes
    report: "DelegationReport"  # noqa: F821
    spec: NeutronCompileSpec
    quantized_model: torch.fx.GraphModule | None  # PyTorch's own quantized model (convert_pt2e): the reference
    edge_program: object = None  # EdgeProgramManager after lowering
    timings: dict[str, float] = field(default_factory=dict)
    etrecord: object = None  # ExecuTorch ETRecord, when lowered with etrecord=True

    def save(self, path: str | Path) -> Path:
        """Write the .pte atomically: an interruption leaves the previous file or the new one, never a broken one.
        Files the back end's compiler produced with no intermediates_dir to receive them (`converter_files`, e.g.
        kernel-selection code) are written beside it."""
        written = write_bytes(path, self.pte)
        for name, data in self.converter_files.items():
            write_bytes(written.parent / name, data)
        return written

    def check_budget(self, sram: int | None = None, flash: int | None = None) -> None:
        """Raise BudgetError when the memory section needs more than the budgets (bytes; None: unchecked); the
        report's memory section then holds them (its totals say "of the N budget"). On refusal nothing of this
        lowering stays on disk: the files it wrote into intermediates_dir are removed."""
        from .report.memory import BudgetError

        if sram is None and flash is None:
            return
        try:
            section = check_budget(self, sram=sram, flash=flash)
        except BudgetError as exc:
            if exc.section is not None:
                self.report.memory = exc.section
            self._remove_intermediates()
            raise
        self.report.memory = section

    def _remove_intermediates(self) -> None:
        directory = self.spec.intermediates_dir
        if not directory:
            return
        for p in self.report.partitions:  # what preprocess writes there per partition (its back end's row says)
            for name in (f"{p.tag}.tflite", *self.report.backend.intermediates(p.tag)):
                Path(directory, name).unlink(missing_ok=True)

    @property
    def converter_files(self) -> dict[str, bytes]:
        """The converter's files that no intermediates_dir received (dump_kernel_selection_code without one): file
        name -> bytes, in partition order; `save` writes them beside the .pte."""
        if self.edge_program is None:
            return {}
        from .core.exported import lowered_modules

        files: dict[str, bytes] = {}
        for lowered in lowered_modules(self.edge_program.exported_program().graph_module).values():
            files.update((getattr(lowered, "meta", {}).get("_delegate_info_meta") or {}).get("converter_files") or {})
        return files

    def save_etrecord(self, path: str | Path) -> Path:
        """Write the ETRecord (graphs and debug handle maps for ExecuTorch's Inspector)."""
        if self.etrecord is None:
            raise LoweringError("no ETRecord was recorded: lower the model with etrecord=True")
        with replacing(path) as tmp:
            self.etrecord.save(str(tmp))
        return Path(path)

    @property
    def payloads(self) -> dict[str, bytes]:
        """Delegate blobs by partition tag, in graph order."""
        return {p.tag: p.blob for p in self.report.partitions}


def _owned(x: torch.Tensor) -> torch.Tensor:
    """A copy of an example input in a layout ExecuTorch can store: channels-last stays channels-last (how the model's
    inputs are stored); any other layout (a 0 stride from numpy's `a[:, None]`, a permuted view) becomes contiguous,
    so the .pte expects plain contiguous inputs."""
    for fmt, rank in ((torch.channels_last, 4), (torch.channels_last_3d, 5)):
        if x.dim() == rank and not x.is_contiguous() and x.is_contiguous(memory_format=fmt):
            return x.clone(memory_format=fmt)
    return x.clone(memory_format=torch.contiguous_format)


def _as_tuple(inputs) -> tuple:
    if isinstance(inputs, torch.Tensor):
        return (inputs,)
    if not isinstance(inputs, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise LoweringError("example inputs must be a tensor or a tuple of tensors")
    return tuple(inputs)


def quantize(model: torch.nn.Module, inputs: tuple, calibration: Iterable, quantizer, progress: Callable = None):
    """PT2E: export, prepare with the quantizer, calibrate, convert. Returns PyTorch's quantized model."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    try:
        program = torch.export.export(model, inputs, strict=False)
    except Exception as exc:
        raise LoweringError(f"torch.export failed on the model ({type(exc).__name__}: {first_line(exc)}); check "
                            f"that the example inputs fit forward()") from exc
    check_no_buffer_mutation(program)
    module = program.module()
    check_batch_norm_operands(module)
    try:
        prepared = prepare_pt2e(module, quantizer)
    except PrecisionError as exc:  # a precision rule that names nothing in the model: the error lists its names
        raise PrecisionRuleError(str(exc)) from None
    samples = list(calibration)
    if not samples:
        raise LoweringError("calibration needs at least one sample, and calibration_inputs is empty: pass a list of "
                            "input tuples with representative data (or None to calibrate on the example inputs)")
    for i, sample in enumerate(samples):
        _check_finite(_as_tuple(sample), f"calibration sample {i}")
    it = progress(samples, desc="calibrating", unit="batch") if progress else samples
    with torch.no_grad(), _one_thread():
        for sample in it:  # a forward() that changes its input in place must not change the caller's samples
            prepared(*(x.clone() for x in _as_tuple(sample)))
    return convert_pt2e(prepared)


@contextlib.contextmanager
def _one_thread():
    """Calibrate on one intra-op thread: a float convolution's sums are split by thread count, so an observed
    range (and the scale and the .pte's bytes) would otherwise depend on how many cores the machine has (one
    scale of the YOLO head at 160 px moved by 1 ulp between 1 and 2 threads). The thread count is the process's:
    calibrations from several threads take turns, each giving the caller's count back."""
    with _CALIBRATION_LOCK:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)


_CALIBRATION_LOCK = threading.Lock()


_BN_OPERANDS = ("weight", "bias", "running_mean", "running_var")


def check_batch_norm_operands(gm: torch.fx.GraphModule) -> None:
    """Refuse a convolution -> batch norm whose statistics or affine parameters forward() computes (say
    `F.batch_norm(conv(x), torch.zeros(C), torch.ones(C))`): PT2E's prepare folds the pair and needs them stored."""
    convs = {torch.ops.aten.conv1d.default, torch.ops.aten.conv2d.default, torch.ops.aten.convolution.default,
             torch.ops.aten.conv_transpose1d.default, torch.ops.aten.conv_transpose2d.input}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target != torch.ops.aten.batch_norm.default:
            continue
        if not (isinstance(node.args[0], torch.fx.Node) and node.args[0].target in convs):
            continue
        for name, operand in zip(_BN_OPERANDS, node.args[1:5]):
            if isinstance(operand, torch.fx.Node) and operand.op not in ("get_attr", "placeholder"):
                raise LoweringError(
                    f"batch norm {node.name} after convolution {node.args[0].name} takes its {name} from a "
                    f"computation in forward() ({operand.target}): make it a parameter or buffer of the module "
                    f"(e.g. self.register_buffer('{name}', ...) or nn.BatchNorm2d), so the pair can be folded")


def check_no_buffer_mutation(program) -> None:
    """Refuse a model whose forward() updates a buffer (a counter, running statistics): the .pte would freeze it."""
    sig = program.graph_signature
    mutated = set(sig.buffers_to_mutate.values())
    buffers = sig.inputs_to_buffers  # placeholder name -> buffer; in-place ops on them stay in torch.export's IR
    for node in program.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or not schema.is_mutable:
            continue
        for arg, value in zip(schema.arguments, node.args):
            base = _view_base(value)  # `self.stat[0] = v` writes through a view: copy_(select(stat, 0, 0), v)
            if arg.alias_info is not None and arg.alias_info.is_write and getattr(base, "name", None) in buffers:
                mutated.add(buffers[base.name])
    mutated = sorted(mutated)
    if mutated:
        raise LoweringError(f"the model's forward() updates buffer(s) {', '.join(mutated)}: a lowered .pte would "
                            f"freeze them (same output on every call); remove the in-place updates (or keep that "
                            f"state outside the model), or call model.eval() if they are batch-norm statistics")


def _view_base(value):
    """The tensor a chain of view ops (select, slice, view, ...) starts from: a view's first argument aliases
    its result without writing it."""
    while isinstance(value, torch.fx.Node) and value.op == "call_function" and value.args:
        schema = getattr(value.target, "_schema", None)
        first = schema.arguments[0] if schema is not None and schema.arguments else None
        if first is None or first.alias_info is None or first.alias_info.is_write:
            break
        value = value.args[0]
    return value


def _check_finite(sample: tuple, what: str) -> None:
    problem = calibration_problem(sample)
    if problem:
        raise LoweringError(f"{what}: {problem}; {CALIBRATION_HINT}")


def _already_quantized(model) -> bool:
    """A GraphModule with PT2E quantize/dequantize nodes (convert_pt2e output): quantizing it again would feed
    observers int8 values and abort the process in a quantize kernel."""

    graph = getattr(model, "graph", None)
    return isinstance(model, torch.fx.GraphModule) and graph is not None and any(
        per_tensor_kind(n) is not None for n in graph.nodes)


def _check_runnable(pte: bytes) -> None:
    """Never hand out a program that ExecuTorch's kernels would abort on (runtime/validate.py's checks: a kernel's
    argument assertions end the process with SIGABRT, on the host and on the board alike)."""
    from .runtime.validate import InvalidProgram, check_program

    try:
        check_program(pte)
    except InvalidProgram as exc:
        detail = str(exc).removeprefix("invalid .pte: ").split("; the file is damaged")[0]
        raise LoweringError(f"the lowered program would abort ExecuTorch's runtime ({detail}); nothing was written. "
                            f"Keep the operator that reads this tensor on the NPU or in float "
                            f"(operators_not_to_delegate), and report the model") from None


def _warn_host_unrunnable(edge, program) -> bool:
    """Say at compile time what the .pte will fail to run on the host: an operator left on the CPU that ExecuTorch's
    portable kernels (the host runtime's) do not register, and a 3-D convolution left on the CPU (the portable
    convolution kernel handles 1-D and 2-D only). Returns whether it said anything (the host check is then skipped:
    the .pte is meant for a runtime with those kernels)."""
    from executorch.extension.pybindings import portable_lib

    kernels = set(portable_lib._get_operator_names())
    warned = False
    for plan in program.executorch_program.execution_plan:
        for op in unregistered_operators(plan, kernels):
            warned = True
            log.warning("warning: %s, left on the CPU, has no kernel in the host runtime (ExecuTorch's portable "
                        "kernels): `run`, `compare` and `profile` fail on this .pte on the host, and a device "
                        "runtime needs a kernel library that registers it", op_name(op))
    for node in edge.exported_program().graph.nodes:
        if node.op == "call_function" and "convolution" in str(node.target) and node.args:
            val = getattr(node.args[0], "meta", {}).get("val")
            if isinstance(val, torch.Tensor) and val.dim() == 5:
                warned = True
                log.warning("warning: %s is a 3-D convolution (Conv3d) left on the CPU: ExecuTorch's portable "
                            "kernels cannot run it, so this .pte fails on the host runtime; use Conv2d, or a "
                            "runtime with a 3-D convolution kernel", node.name)
    return warned


def _host_check(pte: bytes, inputs: tuple, edge, report) -> None:
    """Execute the finished program once on the host with the example inputs, in a child process
    (runtime/isolated.py), and refuse it when that fails or crashes: a .pte that cannot run is never handed out. A
    device-only payload (microcode, a Vela command stream without its reference) runs as the TFLite its compiler was
    given (`HOST_REFERENCE_META`)."""
    from .core.exported import lowered_modules
    from .core.payload import HOST_REFERENCE_META
    from .runtime.errors import NeutronRuntimeError
    from .runtime.isolated import HostRunCrashed, run_isolated

    references = {}
    for lowered in lowered_modules(edge.exported_program().graph_module).values():
        meta = getattr(lowered, "meta", {}).get("_delegate_info_meta") or {}
        if meta.get(HOST_REFERENCE_META):
            references[bytes(lowered.processed_bytes)] = meta[HOST_REFERENCE_META]
    names = {p.blob: p.tag for p in report.partitions}
    try:
        run_isolated(pte, list(inputs), references=references, names=names)
    except HostRunCrashed as exc:
        raise LoweringError(f"{exc}; nothing was written ({_SKIP})") from None
    except NeutronRuntimeError as exc:
        raise LoweringError(f"the lowered program fails on the host: {first_line(exc)}; nothing was written "
                            f"({_SKIP}); report the model") from None


_SKIP = "lower(..., host_check=False) or `compile --no-host-check` skips this check"



class _Stages:
    """Progress of lower(): a bar over the stages and, during partition + convert, one over the partitions."""

    def __init__(self, progress: Callable | None, names: list[str]):
        self._progress, self._names = progress, names
        self._bar = progress(total=len(names), desc=names[0], unit="stage") if progress else None
        self._parts = None

    def done(self) -> None:
        if self._bar is not None:
            self._bar.update(1)
            if self._bar.n < len(self._names):
                self._bar.set_description(self._names[self._bar.n])

    def partition_listener(self):
        if self._progress is None:
            return None

        def on_event(event: str, info: dict) -> None:
            if event == "partitions" and info["total"]:
                self._parts = self._progress(total=info["total"], desc="converting partitions", unit="partition")
            elif event == "partition" and self._parts is not None:
                self._parts.set_postfix_str(info["name"])
                self._parts.update(1)

        return on_event

    def close(self) -> None:
        for bar in (self._parts, self._bar):
            if bar is not None:
                bar.close()


def lower(
    model: torch.nn.Module,
    inputs,
    calibration_inputs: Iterable | None = None,
    target: str | None = None,
    *,
    spec: NeutronCompileSpec | None = None,
    quantizer=None,
    quantize_model: bool = True,
    progress: Callable | None = None,
    etrecord: bool = False,
    sram_budget: int | str | None = None,
    flash_budget: int | str | None = None,
    precision=None,
    quantized_io: bool = False,
    host_check: bool = True,
    **spec_options,
) -> LoweringResult:
    """Quantize `model` for the NPU, partition and lower it, and return the .pte with its report.

    inputs: example inputs (a tensor or tuple of tensors; static shapes).
    calibration_inputs: an iterable of input tuples for PTQ calibration; defaults to the example inputs (a
        warning says so: calibrate on real data for usable accuracy).
    spec / spec_options: NeutronCompileSpec, or its fields as keywords (intermediates_dir=..., ...).
    quantize_model: False when `model` is already quantized (a convert_pt2e GraphModule, e.g. after QAT); it is
        then the reference `result.quantized_model`.
    target: Neutron target name (default imxrt700, or `spec.target`), or an Arm Ethos-U target (imx93,
        ethos-u55-128, ethos-u55-256, ethos-u65-256, ethos-u85-128 ... ethos-u85-2048: lowered through Vela, see
        ethos_u/); a different target in both is an error.
    progress: a tqdm-like factory for progress bars (the CLI passes tqdm): one bar over the stages (quantize,
        export, partition + convert, to_executorch), one over the calibration batches, one over the partitions.
    etrecord: also record ExecuTorch's ETRecord (`result.etrecord`, `result.save_etrecord(path)`) so that an ETDump
        of the .pte (host: `runtime.run(..., etdump=path)`) maps back to the model's operators in the Inspector.
    sram_budget / flash_budget: bytes, or sizes such as "512KiB" / "2MB" (report.memory.parse_size); a program
        whose memory section (`result.report.memory`) needs more raises BudgetError (report/memory.py).
    precision: per-layer precision of the target's quantizer: "head=float,type:Conv2d=int16,op:aten.softmax=float,
        node:conv2d_3=int8,default=int8", "@FILE" (that text, JSON or TOML), a mapping or a PrecisionConfig
        (quantizer/precision.py). Ops kept float run on the CPU with the reason "kept float by the quantization
        config". With `quantizer=`, configure that quantizer instead.
    quantized_io: the .pte takes and returns the quantized (int8 / int16) tensors instead of float ones, in the
        layout the float ones have; their scales and zero points are in the .pte (`pte.io_qparams`, `inspect_pte`)
        and in the report (`result.report.quantized_io`). `runtime.run` quantizes float inputs with them.
    host_check: execute the finished program once on the host with the example inputs, in a child process, before
        returning it (default): a program that fails or crashes there raises LoweringError, one line naming the
        partition or kernel and its arguments, and nothing of the lowering stays on disk. A device-only payload runs
        as the TFLite its compiler was given. Skipped (with a warning already given) where the program uses CPU
        operators the host runtime has no kernel for. Its seconds are `result.timings["host_check"]`.

    The caller's model is never changed: an `nn.Module` is deep-copied and the copy is put in eval mode (dropout
    off, batch-norm statistics frozen) and calibrated. A model whose forward() updates a buffer is refused
    (LoweringError). Calls from several threads are serialized (torch.export is not thread-safe).
    """
    budgets = {k: None if v is None else parse_size(v) for k, v in (("sram", sram_budget), ("flash", flash_budget))}
    message_only_root_logging()  # before ExecuTorch's own logging.debug() configures the root (core/_quiet.py)
    with _LOWER_LOCK:  # a bad size fails above, before any work
        result = _lower(model, inputs, calibration_inputs, target, spec, quantizer, quantize_model, progress,
                        etrecord, spec_options, precision, quantized_io, host_check)
    result.check_budget(**budgets)
    return result


def _lower(model, inputs, calibration_inputs, target, spec, quantizer, quantize_model, progress, etrecord,
           spec_options, precision=None, quantized_io=False, host_check=True) -> LoweringResult:
    from executorch.exir import to_edge_transform_and_lower

    spec = resolve_spec(target, spec, **spec_options)
    if precision is not None and not quantize_model:
        raise LoweringError("precision configures quantization, but quantize_model=False (the model is already "
                            "quantized): set it on the quantizer you quantized with, or drop precision")
    pipeline = assemble(spec, quantizer, quantized_io=quantized_io,
                        **({"precision": precision} if precision is not None else {}))
    inputs = tuple(_owned(x) for x in _as_tuple(inputs))  # a forward() that changes its input must not reach the caller
    if quantize_model and _already_quantized(model):
        raise LoweringError("the model is already quantized (it holds quantize/dequantize nodes, e.g. convert_pt2e "
                            "output): lower it as is with quantize_model=False (CLI: --qat), or pass the float model")
    if isinstance(model, torch.nn.Module) and not isinstance(model, torch.fx.GraphModule):
        model = copy.deepcopy(model).eval()  # calibration and eval() must not touch the caller's model
    timings: dict[str, float] = {}
    core = pipeline.cortex_m_core
    stages = _Stages(progress, ["quantize"] * quantize_model + ["export", "partition + convert"]
                     + ["Cortex-M leftovers"] * bool(core) + ["to_executorch"] + ["host check"] * host_check)

    quantized = None if quantize_model else model  # an already quantized model is its own reference
    if quantize_model:
        if calibration_inputs is None:
            log.warning("no calibration inputs: calibrating on the example inputs only; pass calibration_inputs "
                        "with representative data for usable int8 accuracy")
            calibration_inputs = [inputs]
        t0 = time.perf_counter()
        quantized = quantize(model, inputs, calibration_inputs, pipeline.quantizer, progress)
        timings["quantize"] = time.perf_counter() - t0
        model = quantized
        stages.done()

    t0 = time.perf_counter()
    try:
        exported = torch.export.export(model, inputs, strict=False)
    except Exception as exc:
        raise LoweringError(f"torch.export failed on the model: {exc}") from exc
    check_no_buffer_mutation(exported)
    timings["export"] = time.perf_counter() - t0
    stages.done()

    partitioner = pipeline.partitioner
    t0 = time.perf_counter()
    with listening(stages.partition_listener()):
        edge = to_edge_transform_and_lower(exported, partitioner=[partitioner], generate_etrecord=etrecord,
                                           compile_config=pipeline.edge_compile_config)
    edge = pipeline.io_step(edge)
    timings["partition+convert"] = time.perf_counter() - t0
    stages.done()

    leftovers = None
    if core:  # Cortex-M stage: the NPU's leftovers become int8 cortex_m::* kernels
        t0 = time.perf_counter()
        edge, leftovers = pipeline.lower_leftovers(edge)
        timings["cortex_m"] = time.perf_counter() - t0
        stages.done()
    edge = pipeline.fold_step(edge)  # the CPU's computations on constants, evaluated once here

    t0 = time.perf_counter()
    program = edge.to_executorch()
    timings["to_executorch"] = time.perf_counter() - t0
    stages.done()

    _check_runnable(program.buffer)
    unrunnable = _warn_host_unrunnable(edge, program)
    report = DelegationReport.build(exported, edge, partitioner, spec, leftovers)
    report.pte_bytes = len(program.buffer)
    report.memory = memory_section(program.buffer, spec)
    result = LoweringResult(program.buffer, report, spec, quantized, edge, timings,
                            program.get_etrecord() if etrecord else None)
    if host_check and not unrunnable:
        t0 = time.perf_counter()
        try:
            _host_check(program.buffer, inputs, edge, report)
        except LoweringError:
            stages.close()
            result._remove_intermediates()
            raise
        timings["host_check"] = time.perf_counter() - t0
    if host_check:
        stages.done()
    stages.close()
    if not report.partitions:
        log.warning("nothing was delegated to the NPU: %s", report.summary_line())
    return result

"""The one reader of the .pte format, and what is inside a .pte: methods, their inputs and outputs, CPU kernels and
every delegate with its payload.

`read_pte` parses the file once with ExecuTorch's own flatbuffer deserializer (`executorch.exir._serialize.
_program.deserialize_pte_binary`, which also inlines delegate segments) and is the only caller of it: the runtime
check (runtime/validate.py), the Model Explorer overlays (report/model_explorer.py), the board's output
quantization (board/qparams.py) and, through the back-end table, each back end's host run (`on_load`) and TFLite
(`pte_tflite`) read a `PteFile`. Its errors (`PteError`) say whether the file is missing, is not a .pte (its file
identifier) or is damaged. A delegate's compile specs are decoded by compile_spec.py.

`inspect_pte` summarizes a `PteFile`: each delegate blob as its back end's row (backends.py `view`) shows it:
payload kind, a one-line summary, I/O format flags and, where the host runs a TFLite, its operators. With
`memory=True` it also reads what the memory section (report/memory.py) needs: each method's planned buffers
(`non_const_buffer_sizes`), its inputs' and outputs' bytes and whether memory planning placed them, the constant
data, the named data and, through each delegate's back end (backends.py `memory`), what its payload needs on the
device.

A .pte lowered with quantized I/O (`lower(..., quantized_io=True)`) stores its inputs' and outputs' qparams as
ExecuTorch's constant methods (`forward_input0_scale`, `forward_input0_zp`, `..._quant_min`, `..._quant_max`,
`..._dtype`, the names of `executorch.exir.passes.quantize_io_pass`); `io_qparams` reads them, and `inspect_pte`
shows them under their method (`MethodInfo.quantized_io`) instead of as methods of their own.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import backends
from .compile_spec import NeutronCompileSpec
from .tflite.reader import op_name, read_model


class PteError(ValueError):
    """The file is missing, or is not a .pte ExecuTorch can parse."""


@dataclass(frozen=True)
class PteFile:
    """A .pte read once: ExecuTorch's `Program` (executorch.exir.schema: execution plans, delegates, constant
    buffers; delegate blobs inlined) and the named data it carries, by key."""

    path: str | None  # where it was read from (None: given as bytes)
    data: bytes
    program: object
    named_data: dict[str, bytes]

    def blob(self, delegate) -> bytes:
        """A delegate's payload (its processed data); empty when its index points past the program's blobs."""
        blobs = self.program.backend_delegate_data
        index = delegate.processed.index
        return bytes(blobs[index].data) if 0 <= index < len(blobs) else b""

    def compile_spec(self, delegate) -> NeutronCompileSpec:
        """The NeutronCompileSpec a delegate of this package was lowered with."""
        return NeutronCompileSpec.from_compile_specs(delegate.compile_specs)

    def constants(self) -> dict[str, object]:
        """ExecuTorch's constant methods (no inputs, one int / float / bool output): name -> value."""
        found = {}
        for plan in self.program.execution_plan:
            if plan.inputs or len(plan.outputs) != 1:
                continue
            val = plan.values[plan.outputs[0]].val
            for attr in ("double_val", "int_val", "bool_val"):
                if hasattr(val, attr):
                    found[plan.name] = getattr(val, attr)
        return found


_IO_KEY = re.compile(r"(?P<method>.+)_(?P<side>input|output)(?P<index>\d+)_(?P<key>scale|zp|quant_min|quant_max|dtype)")
#: ExecuTorch ScalarType codes of quantized I/O -> their names
_IO_DTYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 27: "uint16"}


@dataclass(frozen=True)
class IOQParams:
    """How one input or output of a quantized-I/O method is quantized: q = clamp(round(x / scale) + zero_point,
    qmin, qmax) in `dtype`; x = (q - zero_point) * scale."""

    side: str  # "input" or "output"
    index: int
    scale: float
    zero_point: int
    qmin: int
    qmax: int
    dtype: str  # "int8", "int16", ...

    def __str__(self) -> str:
        return f"{self.side} {self.index}: {self.dtype}, scale {self.scale:.6g}, zero point {self.zero_point}"


def io_qparams(constants: dict[str, object]) -> dict[str, list[IOQParams]]:
    """method name -> the qparams of its quantized inputs and outputs (inputs first, by index), read from the
    constant methods (`PteFile.constants()`, or an EdgeProgramManager's `_config_methods`) that name them."""
    fields: dict[tuple, dict] = {}
    for name, value in constants.items():
        m = _IO_KEY.fullmatch(name)
        if m:
            fields.setdefault((m["method"], m["side"], int(m["index"])), {})[m["key"]] = value
    found: dict[str, list[IOQParams]] = {}
    for (method, side, index), f in sorted(fields.items(), key=lambda kv: (kv[0][0], kv[0][1] != "input", kv[0][2])):
        if {"scale", "zp", "quant_min", "quant_max", "dtype"} <= set(f):
            found.setdefault(method, []).append(IOQParams(
                side, index, float(f["scale"]), int(f["zp"]), int(f["quant_min"]), int(f["quant_max"]),
                _IO_DTYPES.get(int(f["dtype"]), f"ScalarType {int(f['dtype'])}")))
    return found


def read_pte(pte: str | Path | bytes) -> PteFile:
    """Read a .pte given as a path or bytes; raises PteError when there is no file, when it is not an ExecuTorch
    program (its file identifier), or when ExecuTorch cannot parse it."""
    path = None
    if not isinstance(pte, (bytes, bytearray, memoryview)):
        path = str(pte)
        if not Path(path).is_file():
            raise PteError(f"no .pte file at {path}")
        pte = Path(path).read_bytes()
    data = bytes(pte)
    where = path or "the data"
    problem = _identifier_problem(data)
    if problem:
        raise PteError(f"{where} is not an ExecuTorch program: {problem}")
    from executorch.exir._serialize._program import deserialize_pte_binary

    try:
        pte_file = deserialize_pte_binary(data)
    except Exception as exc:  # noqa: BLE001 - flatbuffer, flatc and UTF-8 errors come in many types
        logging.getLogger(__name__).debug("deserialize_pte_binary: %s: %s", type(exc).__name__, exc)
        detail = " ".join(str(exc).split())[:160]
        raise PteError(f"{where} is not a valid .pte: ExecuTorch cannot parse it (the file is truncated or damaged): "
                       f"{type(exc).__name__}: {detail}; re-export it") from None
    named = pte_file.named_data
    try:
        by_key = {} if named is None else {key: bytes(named.buffers[entry.buffer_index])
                                           for key, entry in named.pte_data.items()}
    except (IndexError, TypeError) as exc:  # an entry that points past the named data's buffers
        raise PteError(f"{where} is not a valid .pte: its named data is inconsistent ({type(exc).__name__}: {exc}); "
                       f"the file is damaged: re-export it") from None
    return PteFile(path, data, pte_file.program, by_key)


def _identifier_problem(data: bytes) -> str | None:
    """What is wrong with a .pte's file identifier (bytes 4-7: b'ET' and two digits), or None."""
    identifier = bytes(data[4:8])
    if len(data) >= 8 and re.fullmatch(rb"ET\d\d", identifier):
        return None
    if identifier == b"TFL3":
        return ("it is a TFLite model (file identifier b'TFL3'), not a .pte: compile the PyTorch model with "
                "`executorch-neutron compile`")
    return (f"its file identifier is {identifier!r} (bytes 4-7; an ExecuTorch program has b'ET' and two digits, "
            f"e.g. b'ET12')")


@dataclass
class TensorInfo:
    shape: list[int]
    dtype: str
    nbytes: int = 0
    planned: bool = False  # memory planning placed it in a planned buffer (else the caller provides its memory)


@dataclass
class DelegateInfo:
    index: int
    backend_id: str
    bytes: int
    compile_specs: dict[str, str] = field(default_factory=dict)
    kind: str | None = None  # payload kind, as its back end names it
    summary: str | None = None  # the payload in one line, as its back end describes it
    inputs: int | None = None
    outputs: int | None = None
    input_formats: list[int] = field(default_factory=list)
    output_formats: list[int] = field(default_factory=list)
    tflite_ops: dict[str, int] = field(default_factory=dict)
    compiled_by: str | None = None  # what made the payload, as its back end recorded it in the .pte
    error: str | None = None
    memory: list[dict] = field(default_factory=list)  # core.memory.Block.to_dict() lines (inspect_pte(memory=True))


@dataclass
class MethodInfo:
    name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    cpu_kernels: dict[str, int]  # operator -> number of kernel calls
    delegate_calls: int
    delegates: list[DelegateInfo]
    planned_buffers: list[int] = field(default_factory=list)  # non_const_buffer_sizes without the reserved entry 0
    quantized_io: list[dict] = field(default_factory=list)  # IOQParams as dicts: the method's quantized I/O


@dataclass
class PteSummary:
    path: str | None
    bytes: int
    methods: list[MethodInfo]
    constant_bytes: int = 0  # the program's constant buffer (constants of CPU kernels), inline or in its segment
    named_data_bytes: int = 0  # named data (e.g. a partition's host-reference TFLite, beside its payload)

    @property
    def delegates(self) -> list[DelegateInfo]:
        return [d for m in self.methods for d in m.delegates]

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        lines = [f".pte {self.path or '<bytes>'}: {self.bytes} bytes, {len(self.methods)} method(s)"]
        for m in self.methods:
            lines.append(f"method {m.name}: inputs {_tensors(m.inputs)} -> outputs {_tensors(m.outputs)}")
            kernels = ", ".join(f"{k} x{c}" for k, c in sorted(m.cpu_kernels.items())) or "none"
            lines.append(f"  CPU kernels: {kernels}")
            if m.quantized_io:
                lines.append("  quantized I/O: " + "; ".join(str(IOQParams(**q)) for q in m.quantized_io))
            lines.append(f"  delegates: {len(m.delegates)} ({m.delegate_calls} call(s))")
            for d in m.delegates:
                lines.append(f"  [{d.index}] {d.backend_id}: {d.bytes} bytes"
                             + (f", target {d.compile_specs['target']}" if "target" in d.compile_specs else ""))
                if d.summary:
                    lines.append(f"      payload {d.summary}")
                if d.compiled_by:
                    lines.append(f"      device compiler: {d.compiled_by}")
                if d.tflite_ops:
                    lines.append("      TFLite ops: " + ", ".join(f"{k} x{c}" for k, c in sorted(d.tflite_ops.items())))
                if d.error:
                    lines.append(f"      payload error: {d.error}")
        return "\n".join(lines)


def _tensors(items: list[TensorInfo]) -> str:
    return ", ".join(f"{t.dtype}{t.shape}" for t in items) or "()"


_ELEMENT_BYTES = {"uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "half": 2, "float": 4, "double": 8,
                  "bool": 1, "bfloat16": 2, "qint8": 1, "quint8": 1, "qint32": 4, "uint16": 2, "uint32": 4}
#: ExecuTorch's ScalarType names of the integer types (C's byte, char, short, int, long) as users write them
_INTEGER_NAMES = {"byte": "uint8", "char": "int8", "short": "int16", "int": "int32", "long": "int64"}


def _tensor_info(value) -> TensorInfo:
    val = getattr(value, "val", None)
    if val is None or not hasattr(val, "sizes"):
        return TensorInfo([], type(val).__name__.lower())
    dtype = val.scalar_type.name.lower()
    dtype = _INTEGER_NAMES.get(dtype, dtype)
    count = 1
    for d in val.sizes:
        count *= int(d)
    return TensorInfo(list(val.sizes), dtype, count * _ELEMENT_BYTES.get(dtype, 0), val.allocation_info is not None)


def _tflite_ops(tflite: bytes) -> dict[str, int]:
    model = read_model(tflite)
    return dict(Counter(op_name(model, op) for sub in model.subgraphs for op in sub.operators))


def _delegate(index: int, delegate, pte: PteFile, memory: bool) -> DelegateInfo:
    blob = pte.blob(delegate)
    info = DelegateInfo(index, delegate.id, len(blob), NeutronCompileSpec.stored_options(delegate.compile_specs))
    backend = backends.for_id(delegate.id)
    if backend is None or not backend.claims(blob):
        return info  # another vendor's delegate, or a blob its back end does not recognise
    try:
        view = backend.view(blob)
        info.kind, info.summary = view["kind"], view["summary"]
        info.inputs, info.outputs = view["inputs"], view["outputs"]
        info.compiled_by = backend.compiled_by(blob, pte.named_data) if backend.compiled_by else None
        info.input_formats, info.output_formats = list(view["input_formats"] or ()), list(view["output_formats"] or ())
        if view["tflite"] is not None:
            info.tflite_ops = _tflite_ops(view["tflite"]())
        if memory and backend.memory is not None:
            tflite = backend.pte_tflite(blob, pte) if backend.pte_tflite else None
            info.memory = [b.to_dict() for b in backend.memory(blob, pte.compile_spec(delegate), tflite,
                                                               f"delegate {index}")]
    except Exception as exc:  # noqa: BLE001 - a damaged blob is reported, not fatal
        info.error = str(exc)
    return info


def inspect_pte(pte: str | Path | bytes | PteFile, memory: bool = False) -> PteSummary:
    """Summarize a .pte given as a path, bytes or a PteFile; raises PteError when it cannot be read. `memory`: also
    read what the memory section needs (each delegate's back end may compile its partition again to ask its
    compiler)."""
    pte_file = pte if isinstance(pte, PteFile) else read_pte(pte)
    program = pte_file.program
    try:
        return PteSummary(pte_file.path, len(pte_file.data), _methods(pte_file, memory),
                          constant_bytes=sum(len(b.storage) for b in program.constant_buffer),
                          named_data_bytes=sum(len(b) for b in pte_file.named_data.values()))
    except (IndexError, AttributeError, KeyError, TypeError, ValueError) as exc:  # tables that point nowhere
        raise PteError(f"not a valid .pte file: its tables are inconsistent ({type(exc).__name__}: {exc}); the "
                       f"file is damaged: re-export it") from None


def _methods(pte: PteFile, memory: bool) -> list[MethodInfo]:
    methods = []
    constants = pte.constants()
    quantized_io = io_qparams(constants)
    names = {plan.name for plan in pte.program.execution_plan}
    hidden = {n for n in constants if (m := _IO_KEY.fullmatch(n)) and m["method"] in names}
    for plan in pte.program.execution_plan:
        if plan.name in hidden:
            continue
        kernel_calls, delegate_calls = Counter(), 0
        for chain in plan.chains:
            for instr in chain.instructions:
                kind = type(instr.instr_args).__name__
                if kind == "KernelCall":
                    op = plan.operators[instr.instr_args.op_index]
                    kernel_calls[f"{op.name}.{op.overload}" if op.overload else op.name] += 1
                elif kind == "DelegateCall":
                    delegate_calls += 1
        delegates = [_delegate(i, d, pte, memory) for i, d in enumerate(plan.delegates)]
        methods.append(MethodInfo(
            name=plan.name,
            inputs=[_tensor_info(plan.values[i]) for i in plan.inputs],
            outputs=[_tensor_info(plan.values[i]) for i in plan.outputs],
            cpu_kernels=dict(kernel_calls),
            delegate_calls=delegate_calls,
            delegates=delegates,
            planned_buffers=[int(n) for n in plan.non_const_buffer_sizes[1:]],
            quantized_io=[asdict(q) for q in quantized_io.get(plan.name, [])],
        ))
    return methods

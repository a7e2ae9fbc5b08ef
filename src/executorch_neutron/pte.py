"""What is inside a .pte file: methods, their inputs and outputs, CPU kernels and every delegate with its payload.

Parses the file with ExecuTorch's own flatbuffer deserializer (`executorch.exir._serialize._program.
deserialize_pte_binary`, which also inlines delegate segments). Neutron delegate blobs are unpacked with
`payload.unpack`: payload kind (host-reference or device microcode), header (inputs, outputs, format flags) and,
for host-reference payloads, the TFLite operators inside. With `memory=True` it also reads what the memory section
(report/memory.py) needs: each method's planned buffers (`non_const_buffer_sizes`), its inputs' and outputs' bytes
and whether memory planning placed them, the constant data, the named data and, through each delegate's back end
(backends.py `memory`), what its payload needs on the device.
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
    """The file is not a .pte ExecuTorch can parse."""


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
    kind: str | None = None  # Neutron payload kind
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


@dataclass
class PteSummary:
    path: str | None
    bytes: int
    methods: list[MethodInfo]
    constant_bytes: int = 0  # the program's constant buffer (constants of CPU kernels), inline or in its segment
    named_data_bytes: int = 0  # named data (e.g. an Ethos-U partition's host-reference TFLite)

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
            lines.append(f"  delegates: {len(m.delegates)} ({m.delegate_calls} call(s))")
            for d in m.delegates:
                lines.append(f"  [{d.index}] {d.backend_id}: {d.bytes} bytes"
                             + (f", target {d.compile_specs['target']}" if "target" in d.compile_specs else ""))
                if d.kind and d.inputs is None:  # an Ethos-U command stream: no Neutron header to show
                    lines.append(f"      payload {d.kind} (Vela's command stream for the device)")
                elif d.kind:
                    lines.append(f"      payload {d.kind}: {d.inputs} input(s) formats {d.input_formats}, "
                                 f"{d.outputs} output(s) formats {d.output_formats}")
                if d.compiled_by:
                    lines.append(f"      device compiler: {d.compiled_by}")
                if d.tflite_ops:
                    lines.append("      TFLite ops: " + ", ".join(f"{k} x{c}" for k, c in sorted(d.tflite_ops.items())))
                if d.error:
                    lines.append(f"      payload error: {d.error}")
        return "\n".join(lines)


def _tensors(items: list[TensorInfo]) -> str:
    return ", ".join(f"{t.dtype}{t.shape}" for t in items) or "()"


_ELEMENT_BYTES = {"byte": 1, "char": 1, "short": 2, "int": 4, "long": 8, "half": 2, "float": 4, "double": 8,
                  "bool": 1, "bfloat16": 2, "qint8": 1, "quint8": 1, "qint32": 4, "uint16": 2, "uint32": 4}


def _tensor_info(value) -> TensorInfo:
    val = getattr(value, "val", None)
    if val is None or not hasattr(val, "sizes"):
        return TensorInfo([], type(val).__name__.lower())
    dtype = val.scalar_type.name.lower()
    count = 1
    for d in val.sizes:
        count *= int(d)
    return TensorInfo(list(val.sizes), dtype, count * _ELEMENT_BYTES.get(dtype, 0), val.allocation_info is not None)


def _tflite_ops(tflite: bytes) -> dict[str, int]:
    model = read_model(tflite)
    return dict(Counter(op_name(model, op) for sub in model.subgraphs for op in sub.operators))


def _delegate(index: int, delegate, blob: bytes, named: dict[str, bytes], pte=None) -> DelegateInfo:
    specs = {}
    for cs in delegate.compile_specs:
        value = bytes(cs.value)
        try:
            specs[cs.key.removeprefix("neutron.")] = json.loads(value.decode())
        except (UnicodeDecodeError, json.JSONDecodeError):
            specs[cs.key] = value.hex()
    info = DelegateInfo(index, delegate.id, len(blob), specs)
    backend = backends.for_id(delegate.id)
    if backend is None or not backend.claims(bytes(blob)):
        return info  # another vendor's delegate, or a blob its back end does not recognise
    try:
        view = backend.view(bytes(blob))
        info.kind, info.inputs, info.outputs = view["kind"], view["inputs"], view["outputs"]
        info.compiled_by = backend.compiled_by(bytes(blob), named) if backend.compiled_by else None
        info.input_formats, info.output_formats = list(view["input_formats"] or ()), list(view["output_formats"] or ())
        if view["tflite"] is not None:
            info.tflite_ops = _tflite_ops(view["tflite"]())
        if pte is not None and backend.memory is not None:
            spec = NeutronCompileSpec.from_compile_specs(delegate.compile_specs)
            tflite = backend.pte_tflite(bytes(blob), pte) if backend.pte_tflite else None
            info.memory = [b.to_dict() for b in backend.memory(bytes(blob), spec, tflite, f"delegate {index}")]
    except Exception as exc:  # noqa: BLE001 - a damaged blob is reported, not fatal
        info.error = str(exc)
    return info


def identifier_problem(data: bytes) -> str | None:
    """What is wrong with a .pte's file identifier (bytes 4-7: b'ET' and two digits), or None."""
    identifier = bytes(data[4:8])
    if len(data) >= 8 and re.fullmatch(rb"ET\d\d", identifier):
        return None
    if identifier == b"TFL3":
        return ("it is a TFLite model (file identifier b'TFL3'), not a .pte: compile the PyTorch model with "
                "`executorch-neutron compile`")
    return (f"its file identifier is {identifier!r} (bytes 4-7; an ExecuTorch program has b'ET' and two digits, "
            f"e.g. b'ET12')")


def inspect_pte(pte: str | Path | bytes, memory: bool = False) -> PteSummary:
    """Summarize a .pte given as a path or bytes; raises PteError when it cannot be parsed. `memory`: also read
    what the memory section needs (each delegate's back end may compile its partition again to ask its compiler)."""
    path = None
    if not isinstance(pte, (bytes, bytearray, memoryview)):
        path = str(pte)
        if not Path(path).is_file():
            raise PteError(f"no .pte file at {path}")
        pte = Path(path).read_bytes()
    data = bytes(pte)
    problem = identifier_problem(data)
    if problem:
        raise PteError(f"{path or 'the data'} is not an ExecuTorch program: {problem}")
    from executorch.exir._serialize._program import deserialize_pte_binary

    try:
        pte_file = deserialize_pte_binary(data)
    except Exception as exc:  # noqa: BLE001 - flatbuffer errors come in many types
        logging.getLogger(__name__).debug("deserialize_pte_binary: %s: %s", type(exc).__name__, exc)
        raise PteError(f"{path or 'the data'} is not a valid .pte: ExecuTorch cannot parse it (the file is truncated "
                       f"or damaged)") from None
    program = pte_file.program
    try:
        named = named_data(pte_file)
        return PteSummary(path, len(data), _methods(program, named, pte_file if memory else None),
                          constant_bytes=sum(len(b.storage) for b in program.constant_buffer),
                          named_data_bytes=sum(len(b) for b in named.values()))
    except (IndexError, AttributeError, KeyError, TypeError, ValueError) as exc:  # tables that point nowhere
        raise PteError(f"not a valid .pte file: its tables are inconsistent ({type(exc).__name__}: {exc}); the "
                       f"file is damaged: re-export it") from None


def named_data(pte_file) -> dict[str, bytes]:
    """The named data a deserialized .pte carries (ExecuTorch's NamedDataStore entries), by key."""
    named = getattr(pte_file, "named_data", None)
    return {} if named is None else {key: bytes(named.buffers[entry.buffer_index])
                                      for key, entry in named.pte_data.items()}


def _methods(program, named: dict[str, bytes], pte=None) -> list[MethodInfo]:
    blobs = [bytes(d.data) for d in program.backend_delegate_data]
    methods = []
    for plan in program.execution_plan:
        kernel_calls, delegate_calls = Counter(), 0
        for chain in plan.chains:
            for instr in chain.instructions:
                kind = type(instr.instr_args).__name__
                if kind == "KernelCall":
                    op = plan.operators[instr.instr_args.op_index]
                    kernel_calls[f"{op.name}.{op.overload}" if op.overload else op.name] += 1
                elif kind == "DelegateCall":
                    delegate_calls += 1
        delegates = [_delegate(i, d, blobs[d.processed.index] if d.processed.index < len(blobs) else b"", named, pte)
                     for i, d in enumerate(plan.delegates)]
        methods.append(MethodInfo(
            name=plan.name,
            inputs=[_tensor_info(plan.values[i]) for i in plan.inputs],
            outputs=[_tensor_info(plan.values[i]) for i in plan.outputs],
            cpu_kernels=dict(kernel_calls),
            delegate_calls=delegate_calls,
            delegates=delegates,
            planned_buffers=[int(n) for n in plan.non_const_buffer_sizes[1:]],
        ))
    return methods

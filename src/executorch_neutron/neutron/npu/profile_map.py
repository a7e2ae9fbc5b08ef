"""The profiling `debug_handle_map`: Neutron kernel index -> edge debug handles, read from the converter's console.

With `use_profiling` the converter prints its graph dumps (its profiling contract, described here). The converted graph is
a sequence of blocks opened by a line `NeutronOperator "subgraph_<N>":`, each with an `Operators:` list and a
`Kernels:` list, up to the next `NeutronOperator` line, an empty line or a line starting with `=`. Kernels, in
the order printed, are the device's kernels in execution order. A kernel entry is its kind on a line of its own
(`Conv2DStandardV2`), optionally followed by `Inputs:` / `Outputs:` with tensor names, either as `[k]: name` lines or
on the same line separated by commas or spaces. A kernel that lists no tensors takes those of its block (a
`Name: subgraph_<N>` section's `Inputs:`/`Outputs:`, when the dump has one).

Matching kernels to our TFLite operators, by tensor names (a converter tensor `<tflite name>/<suffix>` belongs to the
TFLite tensor `<tflite name>`):
1. kernels of an inserted kind (transpose, pad, slice) map to a TFLite operator of that family only when one of
   their outputs is exactly its output; otherwise to nothing (an empty tuple);
2. a kernel whose outputs contain every output of one or more TFLite operators computes those operators (several
   kernels of one operator all map to it);
3. otherwise, operators whose every non-constant input the kernel reads are candidates; one candidate maps; several
   (e.g. a max pool and an average pool reading one tensor) are narrowed by kind name (MaxPool ~ MAX_POOL_2D), and
   when that leaves not exactly one, the kernel maps to nothing rather than to a wrong operator.
Then TFLite operator -> edge debug handles (kept while converting) composes into kernel -> debug handles, and one
last key with an empty tuple stands for the profile dump itself. The parser is deliberately tolerant: anything it
does not recognise is skipped; no recognisable kernel gives no kernels, and the caller says so. When the blocks
are printed twice (a block number repeats), the last dump wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from ...tflite.reader import op_name, read_model, tensor_name
from ...core.debug_handles import handle_map

_BLOCK = re.compile(r'NeutronOperator\s+"?subgraph_(\d+)"?\s*:')
_SECTION = re.compile(r"Name:\s*subgraph_(\d+)\b")
_INDEXED = re.compile(r"\[\d+\]\s*:\s*(\S+)")
_LIST_HEAD = re.compile(r"^(Inputs|Outputs)\s*:\s*(.*)$", re.IGNORECASE)
_KIND = re.compile(r"^[A-Za-z_][\w.]*$")
INSERTED_KINDS = ("transpose", "pad", "slice")


@dataclass
class Kernel:
    kind: str
    block: int
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TfliteOp:
    kind: str  # builtin operator name, e.g. CONV_2D
    inputs: tuple[str, ...]  # non-constant input tensor names
    outputs: tuple[str, ...]


def parse_kernels(console: str) -> list[Kernel]:
    """Kernels of the converted graph, in execution order (see the module docstring)."""
    sections = _sections(console)
    kernels: list[Kernel] = []
    seen: set[int] = set()
    block, mode, current, io = None, None, None, None
    for raw in console.splitlines():
        line = raw.strip()
        opened = _BLOCK.search(line)
        if opened:
            block, mode, current, io = int(opened.group(1)), None, None, None
            if block in seen:  # the graph is printed again: the last dump wins
                kernels, seen = [], set()
            seen.add(block)
            continue
        if block is None:
            continue
        if not line or line.startswith("=") or line.startswith("NeutronGraph"):
            block = None
            continue
        low = line.lower()
        if low.startswith("operators:"):
            mode, current = "operators", None
            continue
        if low.startswith("kernels:"):
            mode, current = "kernels", None
            continue
        if mode != "kernels":
            continue
        head = _LIST_HEAD.match(line)
        if head and current is not None:
            io = current.inputs if head.group(1).lower() == "inputs" else current.outputs
            io.extend(_names(head.group(2)))
            continue
        indexed = _INDEXED.findall(line)
        if indexed and current is not None and io is not None:
            io.extend(indexed)
            continue
        first, _, rest = line.partition(" ")
        if _KIND.match(first):
            current, io = Kernel(first, block), None
            kernels.append(current)
            for part in re.split(r"[;|]", rest):
                head = _LIST_HEAD.match(part.strip().strip("()"))
                if head:
                    target = current.inputs if head.group(1).lower() == "inputs" else current.outputs
                    target.extend(_names(head.group(2)))
    for k in kernels:
        if not k.inputs and not k.outputs and k.block in sections:
            k.inputs, k.outputs = list(sections[k.block][0]), list(sections[k.block][1])
    return kernels


def _names(text: str) -> list[str]:
    indexed = _INDEXED.findall(text)
    if indexed:
        return indexed
    return [n for n in re.split(r"[,\s]+", text.strip().strip("[]()")) if n]


def _sections(console: str) -> dict[int, tuple[list[str], list[str]]]:
    """`Name: subgraph_<N>` sections: their Inputs/Outputs tensor names (up to `Tensors:` or the next section)."""
    out: dict[int, tuple[list[str], list[str]]] = {}
    number, io = None, None
    for raw in console.splitlines():
        line = raw.strip()
        named = _SECTION.search(line)
        if named:
            number, io = int(named.group(1)), None
            out[number] = ([], [])
            continue
        if number is None:
            continue
        if line.lower().startswith(("tensors:", "type:")) or _BLOCK.search(line):
            number = None
            continue
        head = _LIST_HEAD.match(line)
        if head:
            io = out[number][0 if head.group(1).lower() == "inputs" else 1]
            io.extend(_names(head.group(2)))
        elif io is not None:
            io.extend(_INDEXED.findall(line))
    return out


def tflite_ops(tflite: bytes) -> list[TfliteOp]:
    """Our partition TFLite's operators with their tensor names (constant inputs left out)."""
    model = read_model(tflite)
    sg = model.subgraphs[0]

    def constant(i: int) -> bool:
        b = sg.tensors[i].buffer
        return 0 < b < len(model.buffers) and model.buffers[b].data is not None and len(model.buffers[b].data) > 0

    ops = []
    for op in sg.operators or []:
        kind = op_name(model, op)
        ins = tuple(tensor_name(sg, int(i)) for i in (op.inputs if op.inputs is not None else [])
                    if i >= 0 and not constant(int(i)))
        outs = tuple(tensor_name(sg, int(i)) for i in (op.outputs if op.outputs is not None else []))
        ops.append(TfliteOp(kind, ins, outs))
    return ops


def _belongs(names: Sequence[str], tensor: str) -> bool:
    return any(n == tensor or n.startswith(tensor + "/") for n in names)


def _norm(kind: str) -> str:
    return re.sub(r"(2d|v\d+)", "", re.sub(r"[^a-z0-9]", "", kind.lower()))


def _same_kind(kernel_kind: str, op_kind: str) -> bool:
    a, b = _norm(kernel_kind), _norm(op_kind)
    return bool(a and b) and (a.startswith(b) or b.startswith(a))


def match_kernel(kernel: Kernel, ops: Sequence[TfliteOp]) -> tuple[int, ...]:
    """Indices of the TFLite operators this kernel computes (rules in the module docstring); () when unknown."""
    low = kernel.kind.lower()
    inserted = next((k for k in INSERTED_KINDS if k in low), None)
    if inserted is not None:
        return tuple(i for i, op in enumerate(ops)
                     if inserted in op.kind.lower() and any(o in kernel.outputs for o in op.outputs))
    by_output = tuple(i for i, op in enumerate(ops)
                      if op.outputs and all(_belongs(kernel.outputs, o) for o in op.outputs))
    if by_output:
        return by_output
    candidates = [i for i, op in enumerate(ops) if op.inputs and all(_belongs(kernel.inputs, t) for t in op.inputs)]
    if len(candidates) > 1:
        candidates = [i for i in candidates if _same_kind(kernel.kind, ops[i].kind)]
    return tuple(candidates) if len(candidates) == 1 else ()


def debug_handle_map(console: str, tflite: bytes,
                     op_debug_handles: Sequence[tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    """Kernel index -> edge debug handles, plus a last key () for the profile dump; {} when no kernel is found."""
    kernels = parse_kernels(console)
    if not kernels:
        return {}
    ops = tflite_ops(tflite)
    per_kernel = []
    for kernel in kernels:
        handles = set()
        for op in match_kernel(kernel, ops):
            if op < len(op_debug_handles):
                handles.update(op_debug_handles[op])
        per_kernel.append(sorted(handles))
    return handle_map(per_kernel)

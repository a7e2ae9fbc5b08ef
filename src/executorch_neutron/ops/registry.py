"""The operator registry: for every edge operator, its Neutron support checks and its TFLite converter.

One entry serves the partitioner (may the NPU run this node? if not, why), the converter (emit TFLite for it),
the delegation report and the generated SUPPORTED_OPS.md, so they can never disagree. Entries are keyed by edge
`OpOverload` objects. A check returns None when the node is supported, otherwise a sentence a user can read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from torch.fx import Node

from ..compile_spec import NeutronCompileSpec
from ..exported import op_name
from ..target import NeutronTarget
from .args import NodeArgs


@dataclass(frozen=True)
class CheckContext:
    target: NeutronTarget
    spec: NeutronCompileSpec
    constant_names: frozenset[str] = frozenset()  # placeholders that are parameters, buffers or constants
    quantized_model: bool = True  # the program holds quantize nodes (else no node can be int8)

    @classmethod
    def for_program(cls, spec: NeutronCompileSpec, program) -> "CheckContext":
        from ..exported import constant_names
        from ..qdq import is_q

        quantized = any(is_q(n) for n in program.graph.nodes)
        return cls(spec.neutron_target, spec, constant_names(program), quantized)

    def is_constant(self, node) -> bool:
        return isinstance(node, Node) and (
            node.op == "get_attr" or (node.op == "placeholder" and node.name in self.constant_names)
        )

    @property
    def num_macs(self) -> int:
        return self.target.num_macs

    def allows(self, option: str) -> bool:
        """Whether the model author enabled the custom delegation option `option` (see DELEGATION_OPTIONS)."""
        if option not in DELEGATION_OPTIONS:
            raise KeyError(f"undocumented delegation option {option!r}")
        return option in self.spec.custom_delegation_options


#: custom_delegation_options: opt-in, case-by-case delegation the defensive defaults refuse. name -> what it does.
DELEGATION_OPTIONS: dict[str, str] = {
    "allow_float_constants": (
        "a float constant operand that the quantizer left unquantized (e.g. a tensor multiplier or divisor) is "
        "quantized by the converter (symmetric int8 per tensor); results then differ from PyTorch's quantized "
        "model by that rounding. Scalars are always accepted: they are represented exactly."),
    "allow_any_permutation": (
        "permute_copy of any rank and any permutation is delegated (the default keeps rank <= 4 permutations "
        "that leave a batch dimension larger than 1 in front)."),
    "allow_noop_partitions": (
        "partitions made only of no-op nodes (views, clones, squeezes) are created (by default they stay on the "
        "CPU: a delegate call costs more than the copy)."),
}


def validate_delegation_options(options) -> None:
    unknown = [o for o in options if o not in DELEGATION_OPTIONS]
    if unknown:
        raise ValueError(f"unknown custom_delegation_options {unknown}; known: {sorted(DELEGATION_OPTIONS)}")


CheckFn = Callable[[NodeArgs, CheckContext], Optional[str]]


@dataclass(frozen=True)
class Constraint:
    """One documented limit: `text` for the docs, `check` for a node (None = satisfied, else the reason)."""

    text: str
    check: CheckFn
    hint: str | None = None


@dataclass(frozen=True)
class OpEntry:
    name: str
    targets: tuple
    convert: Callable
    constraints: tuple[Constraint, ...] = ()
    noop: bool = False  # moves no data in a way worth a partition on its own (views, clones)
    shared_qparams: bool = False  # LiteRT needs equal input and output quantization
    doc: str = ""

    def check(self, node: Node, ctx: CheckContext) -> tuple[str, str | None] | None:
        """None when every constraint holds, else (reason, hint) of the first that does not."""
        args = NodeArgs(node)
        for c in self.constraints:
            try:
                reason = c.check(args, ctx)
            except Exception as exc:  # a check that cannot decide rejects
                reason = f"support could not be decided ({type(exc).__name__}: {exc})"
            if reason:
                return reason, c.hint
        return None


REGISTRY: dict[object, OpEntry] = {}


def register(*targets, constraints=(), noop=False, shared_qparams=False):
    """Decorator registering a converter `fn(ctx, args)` for edge ops `targets` with their constraints."""

    def deco(fn):
        entry = OpEntry(
            name=op_name(targets[0]),
            targets=tuple(targets),
            convert=fn,
            constraints=tuple(constraints),
            noop=noop,
            shared_qparams=shared_qparams,
            doc=(fn.__doc__ or "").strip(),
        )
        for t in targets:
            if t in REGISTRY:
                raise ValueError(f"{op_name(t)} is registered twice ({REGISTRY[t].convert.__name__}, {fn.__name__})")
            REGISTRY[t] = entry
        return fn

    return deco


def constraint(text: str, hint: str | None = None):
    """Decorator form: @constraint("stride 1 or 2") def _(args, ctx): return None or reason."""

    def deco(fn: CheckFn) -> Constraint:
        return Constraint(text, fn, hint)

    return deco


def lookup(target) -> OpEntry | None:
    _ensure_loaded()
    return REGISTRY.get(target)


def lookup_aten(target) -> OpEntry | None:
    """The entry of the edge op whose ATen overload is `target` (for decisions taken before decomposition)."""
    _ensure_loaded()
    for key, entry in REGISTRY.items():
        if getattr(key, "_op", key) == target:
            return entry
    return None


def entries() -> list[OpEntry]:
    _ensure_loaded()
    seen, out = set(), []
    for entry in REGISTRY.values():
        if id(entry) not in seen:
            seen.add(id(entry))
            out.append(entry)
    return sorted(out, key=lambda e: e.name)


_loaded = False


def _ensure_loaded() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import load_all

        load_all()

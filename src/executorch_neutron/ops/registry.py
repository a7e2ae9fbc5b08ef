"""The operator registry: for every edge operator, its Neutron support checks, its TFLite converter, and how
NeutronQuantizer annotates the ATen operators that become it.

One entry serves the quantizer (which ATen ops to quantize, with which annotation family), the partitioner (may
the NPU run this node? if not, why; which ATen ops to keep from decomposition), the converter (emit TFLite for it),
the delegation report and the generated SUPPORTED_OPS.md, so they can never disagree. Entries are keyed by edge
`OpOverload` objects. A check returns None when the node is supported, otherwise a sentence a user can read.

Limits are data: a constraint's text may name `{num_macs}`, filled with the target's value where it is shown, and
a constraint (or a whole entry) belongs to one or both constraint profiles (`PROFILES`): the documented operator
table, and what NXP's current eIQ Neutron SDK release delegates.

Each constraint also says which back ends it limits (`backends`, target kinds of target.py). Structural facts (what
our TFLite converter can express, int8 only, what NeutronQuantizer annotates, layout) limit every back end (the
default, `ALL_BACKENDS`); a Neutron hardware or SDK limit (channel alignment to num_macs, kernel or stride ranges,
sizes of Neutron's buffers, the profiles' operator tables) is tagged `backends=NEUTRON` where it is declared. The
profiles are Neutron's operator tables: they select constraints and entries for Neutron targets only; an Ethos-U
target applies every entry and every constraint tagged for it whatever the profile, and Vela's own limits
(ethos_u/constraints.py) instead of Neutron's. `Constraint.applies` is the one place that decides it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from torch.fx import Node

from ..compile_spec import CONSTRAINT_PROFILES as PROFILES
from ..compile_spec import DEFAULT_PROFILE, NeutronCompileSpec
from ..core.exported import constant_names, op_name
from ..core.messages import first_line
from ..core.qdq import is_dq, is_q
from ..target import BACKEND_KINDS, KIND_NAMES, NeutronTarget
from ..target import ETHOS_U as ETHOS_U_KIND
from ..target import NEUTRON as NEUTRON_KIND
from .args import NodeArgs


@dataclass(frozen=True)
class CheckContext:
    target: NeutronTarget
    spec: NeutronCompileSpec
    constant_names: frozenset[str] = frozenset()  # placeholders that are parameters, buffers or constants
    quantized_model: bool = True  # the program holds quantize nodes (else no node can be int8)

    @classmethod
    def for_program(cls, spec: NeutronCompileSpec, program) -> "CheckContext":
        quantized = any(is_q(n) for n in program.graph.nodes)
        return cls(spec.target_info, spec, constant_names(program), quantized)

    def is_constant(self, node) -> bool:
        return isinstance(node, Node) and (
            node.op == "get_attr" or (node.op == "placeholder" and node.name in self.constant_names)
        )

    def is_constant_operand(self, node) -> bool:
        """A constant, or the dequantize of one (a weight, a bias, a scalar baked into the flatbuffer)."""
        return self.is_constant(node) or (is_dq(node) and self.is_constant(node.args[0]))

    @property
    def num_macs(self) -> int:
        return self.target.num_macs

    @property
    def profile(self) -> str:
        return self.spec.constraints

    @property
    def backend(self) -> str:
        """The back end the target is lowered by (`kind`): which constraints apply (`Constraint.applies`)."""
        return self.target.kind

    @property
    def npu(self) -> str:
        """The NPU's name in a reason a user reads."""
        return KIND_NAMES[self.backend]

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
        "partitions made only of no-op nodes (views, clones) are created (by default they stay on the "
        "CPU: a delegate call costs more than the copy)."),
}


def validate_delegation_options(options) -> None:
    unknown = [o for o in options if o not in DELEGATION_OPTIONS]
    if unknown:
        raise ValueError(f"unknown custom_delegation_options {unknown}; known: {sorted(DELEGATION_OPTIONS)}")


CheckFn = Callable[[NodeArgs, CheckContext], Optional[str]]

ALL_PROFILES = frozenset(PROFILES)

#: The back ends a constraint can limit: the target kinds of target.py (`NeutronTarget.kind`, `EthosUTarget.kind`).
ALL_BACKENDS = frozenset(BACKEND_KINDS)
#: A Neutron hardware or SDK limit: Ethos-U targets do not apply it (Vela's limits apply there instead).
NEUTRON = frozenset({NEUTRON_KIND})
#: A limit of the Ethos-U back end (Vela's, registered by ethos_u/constraints.py with `add_constraint`).
ETHOS_U = frozenset({ETHOS_U_KIND})
#: The back ends whose operator tables the constraint profiles are: for the others a profile selects nothing.
PROFILED_BACKENDS = frozenset({NEUTRON_KIND})


def in_profile(profiles: frozenset[str], backend: str, profile: str) -> bool:
    """Whether something tagged with constraint `profiles` is in the table `profile` of `backend` (always, for a
    back end the profiles do not describe)."""
    return backend not in PROFILED_BACKENDS or profile in profiles


def runs(target, backend: str, profile: str) -> bool:
    """Whether edge op `target` has a kernel on back end `backend` under constraint profile `profile` (its entry
    exists and is in the profile's table; its constraints still decide per node)."""
    entry = lookup(target)
    return entry is not None and in_profile(entry.profiles, backend, profile)


def fill_limits(text: str, target: NeutronTarget | None = None) -> str:
    """A constraint text with its limits filled in: the target's values, or their names when no target is given
    (or the target has no such value: an Ethos-U target has no num_macs)."""
    macs = getattr(target, "num_macs", None)
    return text.replace("{num_macs}", str(macs) if macs is not None else "num_macs")


@dataclass(frozen=True)
class Constraint:
    """One limit: `text` for the docs (may name `{num_macs}`), `check` for a node (None = satisfied, else the
    reason), the `profiles` of Neutron's operator tables it belongs to, the `backends` it limits (NEUTRON for a
    Neutron hardware or SDK limit; its reason may name Neutron, a reason of any other constraint must not)."""

    text: str
    check: CheckFn
    hint: str | None = None
    profiles: frozenset[str] = ALL_PROFILES
    backends: frozenset[str] = ALL_BACKENDS

    def __post_init__(self) -> None:
        unknown = set(self.backends) - ALL_BACKENDS
        if unknown or not self.backends:
            raise ValueError(f"constraint {self.text!r}: backends {sorted(self.backends)}, known: "
                             f"{sorted(ALL_BACKENDS)}")

    def applies(self, backend: str, profile: str) -> bool:
        """Whether a target of kind `backend`, with constraint profile `profile`, checks this constraint."""
        every = self.backends == ALL_BACKENDS  # a structural fact of the converter or quantizer: any back end's
        return (every or backend in self.backends) and in_profile(self.profiles, backend, profile)

    def describe(self, target: NeutronTarget | None = None) -> str:
        return fill_limits(self.text, target)


#: How NeutronQuantizer annotates an ATen op (the annotators are in quantizer/patterns.py):
#: weighted (conv/linear: per-channel int8 weights, int32 bias, fused activation), weighted_transpose,
#: binary (int8 tensor operands, fused activation), binary_scalar_divisor, matmul (mm/addmm), own_output (free
#: output qparams; `own_output2`: two tensor operands), clamp and mean (own output qparams where a RELU op / the
#: spatial MEAN requantizes, else shared), fixed_sigmoid_softmax / fixed_tanh (the output qparams LiteRT requires),
#: shared (output reuses the input's qparams), concat and shared_operands (inputs and output share qparams).
ANNOTATION_FAMILIES = ("weighted", "weighted_transpose", "binary", "binary_scalar_divisor", "matmul", "own_output",
                       "own_output2", "clamp", "mean", "fixed_sigmoid_softmax", "fixed_tanh", "shared", "concat",
                       "shared_operands")
#: preserve: "always" keeps the ATen op from decomposition (linear: its weight stays one constant operand);
#: "if_delegated" only for the nodes the NPU takes (the CPU has no kernel for the undecomposed op).
PRESERVE_MODES = ("always", "if_delegated")


@dataclass(frozen=True)
class OpEntry:
    name: str
    targets: tuple
    convert: Callable
    constraints: tuple[Constraint, ...] = ()
    noop: bool = False  # moves no data in a way worth a partition on its own (views, clones)
    #: a no-op whose partition is made even when nothing else is in it (squeeze / unsqueeze: NXP's release counts
    #: only views and clones as no-ops, so it delegates a lone squeeze, and parity keeps it on the NPU here too)
    alone: bool = False
    doc: str = ""
    quantize: tuple[tuple[object, str], ...] = ()  # (ATen op, annotation family) for the ATen ops that become it
    preserve: str | None = None  # one of PRESERVE_MODES
    fuses_activation: bool = False  # absorbs a following bounded activation (see fusion.py)
    profiles: frozenset[str] = ALL_PROFILES
    #: which nodes of a preserved ATen op are this entry's at all (others decompose silently, no rejection:
    #: aten.pad in constant mode becomes constant_pad_nd)
    preserve_when: Callable[[NodeArgs], bool] | None = None

    def check(self, node: Node, ctx: CheckContext) -> tuple[str, str | None] | None:
        """None when every constraint holds, else (reason, hint) of the first that does not."""
        if not in_profile(self.profiles, ctx.backend, ctx.profile):
            return (f"not in the {ctx.profile} operator table (constraints={ctx.profile!r})",
                    f"NXP's current SDK delegates it: use constraints='{DEFAULT_PROFILE}'")
        args = NodeArgs(node)
        for c in self.constraints:
            if not c.applies(ctx.backend, ctx.profile):
                continue
            try:
                reason = c.check(args, ctx)
            except Exception as exc:  # a check that cannot decide rejects
                reason = f"support could not be decided ({type(exc).__name__}: {first_line(exc)})"
            if reason:
                return reason, (fill_limits(c.hint, ctx.target) if c.hint else None)
        return None


REGISTRY: dict[object, OpEntry] = {}


def register(*targets, constraints=(), noop=False, alone=False, quantize=None, preserve=None, fuses_activation=False,
             profiles=ALL_PROFILES, preserve_when=None):
    """Decorator registering a converter `fn(ctx, args)` for edge ops `targets` with their constraints.

    quantize: {annotation family: ATen ops} for the ATen ops NeutronQuantizer annotates that become these edge ops.
    """
    quantize = tuple((op, family) for family, ops in (quantize or {}).items() for op in ops)
    bad = [f for _, f in quantize if f not in ANNOTATION_FAMILIES] + (
        [preserve] if preserve is not None and preserve not in PRESERVE_MODES else [])
    if bad:
        raise ValueError(f"{op_name(targets[0])}: unknown annotation family or preserve mode {bad}")

    def deco(fn):
        entry = OpEntry(
            name=op_name(targets[0]),
            targets=tuple(targets),
            convert=fn,
            constraints=tuple(constraints),
            noop=noop,
            alone=alone,
            doc=(fn.__doc__ or "").strip(),
            quantize=quantize,
            preserve=preserve,
            fuses_activation=fuses_activation,
            profiles=frozenset(profiles),
            preserve_when=preserve_when,
        )
        for t in targets:
            if t in REGISTRY:
                raise ValueError(f"{op_name(t)} is registered twice ({REGISTRY[t].convert.__name__}, {fn.__name__})")
            REGISTRY[t] = entry
        return fn

    return deco


def constraint(text: str, hint: str | None = None, profiles=ALL_PROFILES, backends=ALL_BACKENDS):
    """Decorator form: @constraint("stride 1 or 2", backends=NEUTRON) def _(args, ctx): return None or reason."""
    def deco(fn: CheckFn) -> Constraint:
        return Constraint(text, fn, hint, frozenset(profiles), frozenset(backends))

    return deco


def documented_only(c: Constraint) -> Constraint:
    """The same constraint, applied only with the documented table (NXP's current SDK does not enforce it): a
    limit of Neutron's documented operator table, so a Neutron-only one."""
    return Constraint(c.text, c.check, c.hint, frozenset({"documented"}), NEUTRON)


#: (edge ops, constraint) added by a back end with `add_constraint`, in the order added (its docs list them)
ADDED: list[tuple[frozenset, Constraint]] = []


def add_constraint(ops, c: Constraint) -> Constraint:
    """A back end's own limit on edge ops `ops` (already registered): appended to each op's entry, after the entry's
    own constraints, and checked like them (`Constraint.applies` with the constraint's `backends`). The check
    sees every node of the entry, so it should return None for a node whose target is not in `ops`. Returns `c`."""
    _ensure_loaded()
    ops = frozenset(ops)
    if any(c is added for _, added in ADDED):
        raise ValueError(f"constraint {c.text!r} is added twice")
    for op in sorted(ops, key=op_name):
        entry = REGISTRY.get(op)
        if entry is None:
            raise ValueError(f"constraint {c.text!r}: {op_name(op)} has no registry entry")
        if any(x is c for x in entry.constraints):
            continue  # another op of the same entry
        grown = dataclasses.replace(entry, constraints=entry.constraints + (c,))
        for key, value in REGISTRY.items():
            if value is entry:
                REGISTRY[key] = grown
    ADDED.append((ops, c))
    return c


#: edge ops that have no entry for a reason more specific than "no kernel for this operator": op -> {back-end
#: kind: reason}, added with `no_kernel` (the partitioner's rejection and SUPPORTED_OPS.md read them)
NO_KERNEL: dict[object, dict[str, str]] = {}
#: op -> fn(NodeArgs) naming what in one node is left to the CPU (appended to the reason), for `no_kernel(detail=)`
NO_KERNEL_DETAIL: dict[object, Callable[[NodeArgs], Optional[str]]] = {}


def no_kernel(ops, reasons: dict[str, str], detail: Callable[[NodeArgs], Optional[str]] | None = None) -> None:
    """Record why edge ops `ops` have no entry, per back-end kind (every kind of BACKEND_KINDS); `detail(args)`
    may name what in a node leaves it there."""
    missing = sorted(set(BACKEND_KINDS) - set(reasons))
    if missing:
        raise ValueError(f"no_kernel {[op_name(o) for o in ops]}: no reason for back ends {missing}")
    for op in ops:
        if op in REGISTRY or op in NO_KERNEL:
            raise ValueError(f"{op_name(op)} already has an entry or a no_kernel reason")
        NO_KERNEL[op] = dict(reasons)
        if detail is not None:
            NO_KERNEL_DETAIL[op] = detail


def no_kernel_reason(node: Node, backend: str) -> str | None:
    """The recorded reason for `node`'s op on `backend`, with what in the node leaves it there when known."""
    _ensure_loaded()
    why = NO_KERNEL.get(node.target, {}).get(backend)
    detail = NO_KERNEL_DETAIL.get(node.target)
    if why is None or detail is None:
        return why
    try:
        found = detail(NodeArgs(node))
    except Exception:  # noqa: BLE001 - the detail is a nicety; the reason stands without it
        found = None
    return f"{found}; {why}" if found else why


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


def annotation_table() -> dict:
    """ATen op -> (annotation family, fuses a following activation), for NeutronQuantizer: every ATen op that
    becomes an edge op some entry converts."""
    table = {}
    for entry in entries():
        for op, family in entry.quantize:
            if op in table:
                raise ValueError(f"{op} is quantized by two registry entries")
            table[op] = (family, entry.fuses_activation)
    return table


def preserved_ops(mode: str) -> tuple:
    """The ATen ops kept from decomposition in `mode` ("always" or "if_delegated")."""
    return tuple(getattr(t, "_op", t) for e in entries() if e.preserve == mode for t in e.targets)


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

"""The operator registry: for every edge operator, its support checks, its TFLite converter, and how
NeutronQuantizer annotates the ATen operators that become it.

One entry serves the quantizer (which ATen ops to quantize, with which annotation family), the partitioner (may
the NPU run this node? if not, why; which ATen ops to keep from decomposition), the converter (emit TFLite for it),
the delegation report and the generated SUPPORTED_OPS.md, so they can never disagree. Entries are keyed by edge
`OpOverload` objects.

A constraint is its rule's text, written once (what SUPPORTED_OPS.md lists; it may name `{num_macs}`, filled with
the target's value where it is shown), and a check that returns None when a node meets it, else what it found in
the node; a rejection reads "<what was found>: <the rule's text>" (`Constraint.reason`, the one place that
writes it). A constraint (or a whole entry) belongs to one or both constraint profiles (`PROFILES`), the operator
tables of the back ends in `PROFILED_BACKENDS`.

Each constraint also says which back ends it limits (`backends`, target kinds of target.py). The constraints
declared in ops/ are structural facts (what our TFLite converter can express, int8 only, what NeutronQuantizer
annotates, layout) and limit every back end (the default, `ALL_BACKENDS`). A back end's own hardware or compiler
limits are added by its folder (`add_constraint`, tagged with its kind), and its own reasons for operators without
a kernel likewise (`no_kernel` with its kind); backends.register_limits adds every back end's. `Constraint.applies`
is the one place that decides which constraints a target checks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

from torch.fx import Node

from ..compile_spec import CONSTRAINT_PROFILES as PROFILES
from ..compile_spec import DEFAULT_PROFILE, NeutronCompileSpec
from ..core.exported import constant_names, op_name
from ..core.messages import first_line
from ..core.qdq import is_dq, is_q
from ..target import BACKEND_KINDS, KIND_NAMES, NeutronTarget
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
    """One limit: `text`, the rule (the docs list it; may name `{num_macs}`), `check` for a node (None = satisfied,
    else what it found that breaks the rule), the `profiles` of the operator tables it belongs to, the `backends`
    it limits (every back end for a structural fact; one back end's kind for its own limit, added by its folder)."""

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

    def reason(self, found: str, target: NeutronTarget | None = None) -> str:
        """The rejection of a node: what its check found, then the rule's text."""
        return f"{found}: {self.describe(target)}"


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
    #: the converter writes the op with int16 activations too (TFLite's 16x8 form, which LiteRT runs); an int16
    #: node of an entry without it stays on the CPU (`int16_refusal`), and NeutronQuantizer quantizes its ATen ops
    #: int8 under an int16 setting
    int16: bool = False
    #: why the entry has no `int16` (a fact of the converter or of LiteRT's kernel), when more is known than "int8 only"
    no_int16: str | None = None

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
                found = c.check(args, ctx)
            except Exception as exc:  # a check that cannot decide rejects
                found = f"support could not be decided ({type(exc).__name__}: {first_line(exc)})"
            if found:
                return c.reason(found, ctx.target), (fill_limits(c.hint, ctx.target) if c.hint else None)
        return None


REGISTRY: dict[object, OpEntry] = {}
#: what an int16 node of an op without int16 support is told (after why: `int16_refusal`)
INT16_HINT = "quantize it int8 (NeutronQuantizer.set_module_name / set_operator_type / set_node_name)"
#: edge op -> {back-end kind: why that back end's compiler takes the op in int8 only}, added with `int8_only`
INT8_ONLY: dict[object, dict[str, str]] = {}
#: the key of `node.meta["custom"]` where NeutronQuantizer notes an op it quantized int8 under an int16 setting
#: (export and to_edge carry it to the edge graph; the delegation report lists the notes)
KEPT_INT8_META = "executorch_neutron_kept_int8"


def int8_only(ops, reason: str, backends) -> None:
    """Record that back ends `backends` compile edge ops `ops` in int8 only, with the compiler's own `reason` (its
    rule's text). Recording the same again does nothing; another reason for the same op and back end is an error."""
    for op in ops:
        for backend in backends:
            known = INT8_ONLY.setdefault(op, {}).setdefault(backend, reason)
            if known != reason:
                raise ValueError(f"{op_name(op)}: two int8-only reasons on {backend}: {known!r}, {reason!r}")


def int16_refusal(op, backend: str) -> str | None:
    """Why `op` (an edge op, or an ATen op NeutronQuantizer annotates) cannot run with int16 activations on back end
    `backend`, None when it can (or no entry converts it: then it is not quantized at all). The one source of
    per-op int16 support: the partitioner's reason and the quantizer's int8 fallback both read it."""
    _ensure_loaded()
    entry = REGISTRY.get(op) or _quantized_by().get(op)
    if entry is None:
        return None
    for target in entry.targets:
        why = INT8_ONLY.get(target, {}).get(backend)
        if why is not None:
            return why
    if not entry.int16:
        return entry.no_int16 or f"the converter writes {entry.name} in int8 only"
    return None


def _quantized_by() -> dict:
    """ATen op NeutronQuantizer annotates -> the entry that converts what it becomes."""
    return {op: entry for entry in entries() for op, _ in entry.quantize}


def register(*targets, constraints=(), noop=False, alone=False, quantize=None, preserve=None, fuses_activation=False,
             profiles=ALL_PROFILES, preserve_when=None, int16=False, no_int16=None):
    """Decorator registering a converter `fn(ctx, args)` for edge ops `targets` with their constraints.

    quantize: {annotation family: ATen ops} for the ATen ops NeutronQuantizer annotates that become these edge ops.
    int16: the converter writes them with int16 activations (A16W8) and LiteRT runs that; no_int16: why not.
    """
    if int16 and no_int16:
        raise ValueError(f"{op_name(targets[0])}: int16=True with a reason it has no int16 ({no_int16!r})")
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
            int16=int16,
            no_int16=no_int16,
        )
        for t in targets:
            if t in REGISTRY:
                raise ValueError(f"{op_name(t)} is registered twice ({REGISTRY[t].convert.__name__}, {fn.__name__})")
            REGISTRY[t] = entry
        return fn

    return deco


def constraint(text: str, hint: str | None = None, profiles=ALL_PROFILES, backends=ALL_BACKENDS):
    """Decorator form: @constraint("step 1") def _(args, ctx): return None or what breaks it ("step 2")."""
    def deco(fn: CheckFn) -> Constraint:
        return Constraint(text, fn, hint, frozenset(profiles), frozenset(backends))

    return deco


class Limit(NamedTuple):
    """A back end's constraint and the edge ops whose entries it is added to (`add_constraint`)."""

    ops: frozenset
    constraint: Constraint


#: (edge ops, constraint) added by a back end with `add_constraint`, in the order added (its docs list them)
ADDED: list[tuple[frozenset, Constraint]] = []


def add_constraint(ops, c: Constraint) -> Constraint:
    """A back end's own limit on edge ops `ops` (already registered): appended to each op's entry, after the entry's
    own constraints, and checked like them (`Constraint.applies` with the constraint's `backends`). The check
    sees every node of the entry, so it should return None for a node whose target is not in `ops`. Adding the
    same constraint on the same ops again does nothing (a back end's registration is idempotent). Returns `c`."""
    _ensure_loaded()
    ops = frozenset(ops)
    for added_ops, added in ADDED:
        if added is c:
            if added_ops != ops:
                raise ValueError(f"constraint {c.text!r} is added twice, on other ops")
            return c
    if any(c.text == added.text and c.backends == added.backends for _, added in ADDED):
        raise ValueError(f"constraint {c.text!r} is written twice")
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


def no_kernel(ops, reason: str, detail: Callable[[NodeArgs], Optional[str]] | None = None,
              backends=ALL_BACKENDS) -> None:
    """Record why edge ops `ops` have no entry on the back ends `backends` (every back end: a fact of the front
    end; one kind: that back end's own reason, recorded by its folder). `detail(args)` may name what in a node
    leaves it there. Recording the same again does nothing; another reason for the same op and back end is an
    error."""
    unknown = set(backends) - ALL_BACKENDS
    if unknown or not backends:
        raise ValueError(f"no_kernel {[op_name(o) for o in ops]}: back ends {sorted(backends)}, known: "
                         f"{sorted(ALL_BACKENDS)}")
    for op in ops:
        reasons = NO_KERNEL.get(op, {})
        if op in REGISTRY or any(reasons.get(k, reason) != reason for k in backends) or (
                detail is not None and NO_KERNEL_DETAIL.get(op, detail) is not detail):
            raise ValueError(f"{op_name(op)} already has an entry or another no_kernel reason")
        NO_KERNEL[op] = {**reasons, **{k: reason for k in sorted(backends)}}
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


def add_limits(limits, no_kernels, backends, int8_only_ops=()) -> None:
    """A back end's own limits (`Limit`s, added in their order), its reasons for operators without a kernel
    ((edge ops, reason, detail) as `no_kernel` takes them, for `backends`) and for operators its compiler takes in
    int8 only ((edge ops, reason) as `int8_only` takes them). Idempotent."""
    for ops, c in limits:
        add_constraint(ops, c)
    for ops, reason, detail in no_kernels:
        no_kernel(ops, reason, detail, backends=backends)
    for ops, reason in int8_only_ops:
        int8_only(ops, reason, backends)


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

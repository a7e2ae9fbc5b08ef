"""SUPPORTED_OPS.md, generated from the operator registry (`executorch-neutron ops --markdown > SUPPORTED_OPS.md`).

Every row is an edge operator with its dtypes and each constraint as the sentence the partitioner checks, tagged
with the constraint profile it belongs to; then the generic rules every node must meet, the graph passes (from
their own docstrings), and the custom delegation options a model author can turn on. Limits are filled with a
target's values (`target=`) or left as names with the per-target values listed.
"""

from __future__ import annotations

import sys

from .. import backends
from ..compile_spec import CONSTRAINT_PROFILES, DEFAULT_PROFILE
from ..ops import registry
from ..ops.fusion import SUPPORTED_BOUNDS_TEXT
from ..passes import PIPELINE
from ..passes.fold_constants import FOLD_MAX_ELEMENTS
from ..target import KIND_NAMES, all_targets, get_target

_GENERIC = (
    "Every input is int8 (a dequantize node or a constant), every output is quantized to int8 by a quantize node "
    "(NeutronQuantizer annotates every operator of this table); on a target that computes int16 activations "
    "(Ethos-U: `activation_dtypes`), operators marked int16 also take int16 activations with int8 weights (A16W8); "
    "under an int16 setting NeutronQuantizer quantizes the others int8 (the delegation report notes each: \"kept "
    "int8: <why>\"), and an int16 node of them from another quantizer stays on the CPU with that reason.",
    "Shapes are static.",
    "A computation on constants only is folded into a constant before quantization (`fold_constants`); one that is "
    f"not (QAT keeps computations on parameters; results over {FOLD_MAX_ELEMENTS:,} elements) stays on the CPU.",
    "An operator listed in `operators_not_to_delegate` (e.g. `aten::convolution` or `aten.convolution.default`) "
    "stays on the CPU with the reason \"excluded by operators_not_to_delegate\".",
    "A partition made only of no-op nodes (views, clones) is not created, unless `allow_noop_partitions` is set; "
    "a squeeze or unsqueeze in it makes it one (NXP's release delegates them alone).",
    "A dequantize node shared by an NPU node and a CPU node keeps the NPU node on the CPU (a partitioner may not "
    "change the graph).",
    "When a support check cannot be decided statically the node stays on the CPU (the reason says why).",
)


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[0].upper() + text[1:] if text else text
    return text if text.endswith(".") else text + "."


def passes() -> list[tuple[str, str]]:
    """(name, first paragraph of its module docstring) for every rewrite NeutronQuantizer runs before annotation,
    in the pipeline's order."""
    out = []
    for step in PIPELINE:
        doc = (sys.modules[step.run.__module__].__doc__ or "").strip().split("\n\n")[0]
        doc = " ".join(doc.split()).removeprefix("ATen pass: ").removeprefix("Graph pass: ")
        out.append((step.name, doc))
    return out


def _profile_tag(profiles, backends=registry.ALL_BACKENDS) -> str:
    tags = [] if profiles == registry.ALL_PROFILES else [" and ".join(sorted(profiles)) + " only"]
    if backends != registry.ALL_BACKENDS:
        tags.append(" and ".join(KIND_NAMES[b] for b in sorted(backends)) + " only")
    return " *(" + "; ".join(tags) + ")*" if tags else ""


def _dtypes(entry) -> str:
    """int8, and int16 (A16W8) where a target computes it (Ethos-U) unless a reason keeps the op int8."""
    int8_only = {KIND_NAMES[k]: why for t in entry.targets for k, why in registry.INT8_ONLY.get(t, {}).items()}
    if entry.int16 and not int8_only:
        return "int8, int16 (A16W8)"
    why = "; ".join(f"{npu}: {text}" for npu, text in int8_only.items()) or entry.no_int16
    return "int8" + (f" (int16: {why})" if why else "")


def render_markdown(target=None) -> str:
    """SUPPORTED_OPS.md: limits left as names with every target's values, or filled with `target`'s (a name or a
    target)."""
    backends.register_limits()
    sections = [b for b in backends.BACKENDS.values() if b.supported_ops is not None]
    own = {frozenset({b.kind}) for b in sections}  # limits of a back end that lists them in its own section
    tgt = get_target(target) if target is not None else None
    macs = (f"`num_macs` is {tgt.num_macs} ({tgt.name})" if getattr(tgt, "num_macs", None) else
            "`num_macs` is the target's MAC count: " + ", ".join(f"{t.name} {t.num_macs}" for t in all_targets()
                                                                 if getattr(t, "num_macs", None)))
    lines = [
        "# Supported operators" + (f" ({tgt.name})" if tgt else ""),
        "",
        "Generated from the operator registry (`src/executorch_neutron/ops/`) by "
        "`executorch-neutron ops --markdown > SUPPORTED_OPS.md`; do not edit by hand. The partitioner checks "
        "exactly these constraints; a node that fails one stays on the CPU, and the delegation report gives the "
        f"reason. {macs}. Shapes are PyTorch's (NCHW); inside a partition rank-4 tensors are NHWC, and with "
        "`use_neutron_for_format_conversion=True` (default) the partition converts at its boundary with Transpose ops "
        "on the NPU (False: the runtime transposes on the CPU).",
        "",
        "## Constraint profiles",
        "",
        f"`NeutronCompileSpec(constraints=...)` (CLI `--constraints`) picks the table; default `{DEFAULT_PROFILE}`. "
        "A constraint marked *(documented only)* is not enforced by NXP's current SDK release; a row or constraint "
        "marked *(sdk-current only)* is not in the documented table. A constraint marked *(<NPU> only)* is a "
        "hardware or SDK limit of that NPU: other targets do not apply it (a back end with a section below lists its "
        "own limits there); the others are what the converter and the quantizer can express and apply to every "
        "target.",
        "",
    ]
    lines += [f"- `{name}`: {text}." for name, text in CONSTRAINT_PROFILES.items()]
    lines += [
        "",
        "| operator (edge) | dtypes | constraints |",
        "|---|---|---|",
    ]
    for entry in registry.entries():
        names = sorted({registry.op_name(t) for t in entry.targets})
        ops = "<br>".join(f"`{n}`" for n in names) + _profile_tag(entry.profiles)
        cons = [_sentence(c.describe(tgt)) + _profile_tag(c.profiles, c.backends) for c in entry.constraints
                if c.backends not in own]  # a back end's limits listed in its own section below
        if entry.noop and entry.alone:
            cons.append("No-op (moves no data), delegated on its own too (as NXP's release does).")
        elif entry.noop:
            cons.append("No-op (moves no data): not delegated on its own.")
        text = " ".join(cons) if cons else "None beyond int8."
        types = _dtypes(entry)
        lines.append(f"| {ops} | {types} | {text.replace('|', '/')} |")
    lines += ["", "## Operators without a kernel, and why", ""]
    lines += [f"- `{registry.op_name(op)}`: " + "; ".join(f"{npu}: {reasons[k]}" for k, npu in KIND_NAMES.items()
                                                       if k in reasons)
              for op, reasons in sorted(registry.NO_KERNEL.items(), key=lambda kv: registry.op_name(kv[0]))]
    lines += ["", "## Rules for every node", ""]
    lines += [f"- {r}" for r in _GENERIC]
    lines += ["", "## Graph passes (run by NeutronQuantizer before annotation)", ""]
    lines += [f"- **{name}**: {text}" for name, text in passes()]
    lines += ["", "## custom_delegation_options", "",
              "Defaults are defensive. `NeutronCompileSpec(custom_delegation_options=(...))` (or "
              "the partitioner's `custom_delegation_options`) turns on opportunistic delegation; unknown "
              "names are an error.", ""]
    lines += [f"- `{name}`: {text}" for name, text in registry.DELEGATION_OPTIONS.items()]
    producers = sorted({registry.op_name(t) for e in registry.entries() if e.fuses_activation for t in e.targets})
    lines += ["", "## Fused patterns", "",
              f"{', '.join(f'`{p}`' for p in producers)} absorb a following relu, relu6 / hardtanh / clamp with "
              f"bounds {SUPPORTED_BOUNDS_TEXT} into one TFLite operator; NeutronQuantizer fuses exactly these "
              "pairs (other bounds get their own quantization and operator).", ""]
    for b in sections:
        lines += b.supported_ops()
    return "\n".join(lines)

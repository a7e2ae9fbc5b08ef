"""SUPPORTED_OPS.md, generated from the operator registry: `python -m executorch_neutron.ops.docs > SUPPORTED_OPS.md`.

Every row is an edge operator with its dtypes and each constraint as the sentence the partitioner checks; then the
generic rules every node must meet, and the custom delegation options a model author can turn on.
"""

from __future__ import annotations

from . import registry

_GENERIC = (
    "Every input is int8 (a dequantize node or a constant), every output is quantized to int8 by a quantize node "
    "(NeutronQuantizer annotates every operator of this table).",
    "Shapes are static.",
    "A node that computes on constants only is not delegated (fold it before export).",
    "An operator listed in `operators_not_to_delegate` (e.g. `aten::convolution` or `aten.convolution.default`) "
    "stays on the CPU with the reason \"excluded by operators_not_to_delegate\".",
    "A partition made only of no-op nodes (views, clones, squeezes) is not created, unless "
    "`allow_noop_partitions` is set.",
    "A dequantize node shared by an NPU node and a CPU node keeps the NPU node on the CPU (a partitioner may not "
    "change the graph).",
    "When a support check cannot be decided statically the node stays on the CPU (the reason says why).",
)

_PASSES = (
    ("conv1d -> conv2d", "1D convolutions (regular and transposed) become 2D convolutions over a 1 x L image "
                         "(with unsqueeze/squeeze)."),
    ("max_pool1d / avg_pool1d -> 2D", "1D pools become 2D pools over a 1 x L image."),
    ("mean over L -> 4D mean", "a mean over the last axis of an (N, C, L) tensor, or adaptive_avg_pool1d(x, 1), "
                               "becomes a mean over H and W of the (N, C, 1, L) image."),
    ("div -> mul", "division by a scalar or constant tensor becomes multiplication by its reciprocal."),
    ("split -> slices", "split, split_with_sizes and chunk become one slice per used output."),
    ("matmul -> bmm / mm", "torch.matmul of two 3-D (or two 2-D) tensors becomes one bmm (or mm)."),
    ("no-op removal", "clone, alias, detach, eval-mode dropout and same-shape views/reshapes are removed."),
    ("linear + batch norm", "folded by NeutronQuantizer; conv + batch norm is folded by prepare_pt2e itself."),
    ("batch norm counters", "train-mode (QAT) `num_batches_tracked += 1` updates that nothing reads are removed, so "
                            "they do not stay behind as CPU ops."),
)


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[0].upper() + text[1:] if text else text
    return text if text.endswith(".") else text + "."


def render_markdown() -> str:
    lines = [
        "# Operators supported by the Neutron backend",
        "",
        "Generated from the operator registry (`src/executorch_neutron/ops/`) by "
        "`python -m executorch_neutron.ops.docs > SUPPORTED_OPS.md`; do not edit by hand. The partitioner checks "
        "exactly these constraints; a node that fails one stays on the CPU, and the delegation report gives the "
        "reason. `num_macs` is the target's MAC count (8 on imxrt700). Shapes are PyTorch's (NCHW); inside a partition "
        "rank-4 tensors are NHWC, and with `use_neutron_for_format_conversion=True` (default) the partition converts "
        "at its boundary with Transpose ops on the NPU (False: the runtime transposes on the CPU).",
        "",
        "| operator (edge) | dtypes | constraints |",
        "|---|---|---|",
    ]
    for entry in registry.entries():
        names = sorted({registry.op_name(t) for t in entry.targets})
        ops = "<br>".join(f"`{n}`" for n in names)
        cons = [_sentence(c.text) for c in entry.constraints]
        if entry.noop:
            cons.append("No-op (moves no data): not delegated on its own.")
        text = " ".join(cons) if cons else "None beyond int8."
        lines.append(f"| {ops} | int8 | {text.replace('|', '/')} |")
    lines += ["", "## Rules for every node", ""]
    lines += [f"- {r}" for r in _GENERIC]
    lines += ["", "## Graph passes (run by NeutronQuantizer before annotation)", ""]
    lines += [f"- **{name}**: {text}" for name, text in _PASSES]
    lines += ["", "## custom_delegation_options", "",
              "Defaults are defensive. `NeutronCompileSpec(custom_delegation_options=(...))` (or "
              "`NeutronPartitioner(custom_delegation_options=(...))`) turns on opportunistic delegation; unknown "
              "names are an error.", ""]
    lines += [f"- `{name}`: {text}" for name, text in registry.DELEGATION_OPTIONS.items()]
    lines += ["", "## Fused patterns", "",
              "conv, linear, addmm, mm, add and mul absorb a following relu, relu6 / hardtanh / clamp with bounds "
              "(0, 6), (-1, 1), (0, 1) or (0, inf) into one TFLite operator.", ""]
    return "\n".join(lines)


def main() -> None:
    print(render_markdown(), end="")


if __name__ == "__main__":
    main()

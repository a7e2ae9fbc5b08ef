"""Automatic mixed precision: promote the layers that cost the most accuracy until the model reaches an SQNR target.

    from executorch_neutron import auto_precision
    r = auto_precision(model, inputs, calibration, target="imx93", sqnr_db=35)
    print(r); r.save("model.pte"); r.to_dict()

The search, on the calibration samples (at most `max_samples` of them):
1. Layers: each module (innermost, as the exported graph's `nn_module_stack` names it) holding an operator the
   quantizer annotates, or the node itself when it belongs to no module; an operator that only moves data or
   clamps (view, permute, ReLU, max pooling...) goes with the layer it follows. A layer is promoted by a node rule
   per node (`set_node_name`), so that promoting a module never promotes the modules inside it.
2. The ladder: int8 -> int16 -> float on a target whose NPU computes int16 activations ("int16" in
   `activation_dtypes`: int16 activations, int8 weights, still on the NPU), int8 -> float elsewhere (float: on the
   CPU). Each rung in turn, while the target is missed:
   a. Sensitivity: each layer not yet on the rung is raised to it alone, on top of the configuration so far, and
      PyTorch's quantized model (`convert_pt2e`) is run: its output SQNR against the float model ranks the layer.
      Cheap: no lowering.
   b. Greedy: layers are raised to the rung in order of sensitivity until the quantized model reaches the target.
   Int8 weights bound what int16 activations reach (per-channel int8 weights with float activations bound a model
   too): a target above all-int16 goes on to float, where a float layer runs on the CPU (the Cortex-A55 of the
   i.MX 93).
3. Once the target is reached, each raised layer the target does not need goes down one rung again (least
   sensitive first).
4. Verification: the chosen configuration is lowered and its .pte run on the host (`numerics.compare`: the SQNR
   of the .pte against the float model, the worst output); while it misses the target, the next layer is raised.
   If every layer raised still misses it, a one-line warning says so and the best configuration found is returned.
   At least one layer stays on the NPU (int8 or int16: no more than all layers but one are float) unless
   `allow_cpu_only=True`: a target only the all-float model reaches gets a warning with that program's cost.

The cost of each rung's configuration (all-int8, where the int16 rung ended, the chosen one) is its back end's
estimate (`report.estimate`: Vela's cycles on Ethos-U with the CPU part, the Neutron estimate on Neutron), the
memory section's totals and the nodes left on the CPU, each from its lowering. `compile --accuracy-target SQNR_DB`
runs it (`search_for_cli`).
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import Quantizer

from ..lowering import LoweringResult, lower, quantize
from ..numerics import compare, sqnr
from ..pipeline import LoweringError, resolve_spec
from ..quantizer import ANNOTATORS, quantizer_for
from ..report.memory import parse_size

log = logging.getLogger("executorch_neutron")

#: ops that only move data or clamp it: after a layer they go with it (a ReLU promoted with its convolution), else
#: they are a layer of their own (what they quantize is their input)
_FOLLOWERS = frozenset(
    f"aten.{name}" for name in ("view", "_unsafe_view", "reshape", "flatten", "permute", "clone", "squeeze",
                                "unsqueeze", "transpose", "t", "expand", "contiguous", "dropout", "relu", "relu_",
                                "relu6", "hardtanh", "hardtanh_", "clamp", "clamp_", "max_pool2d", "unflatten"))


@dataclass(frozen=True)
class Layer:
    """What the search promotes as one: a module's operators (or one operator outside any module) with the
    activations and data movement that follow it."""

    name: str  # the innermost module, as in model.named_modules(), or the node when it belongs to no module
    nodes: tuple[str, ...]  # its nodes in the graph the quantizer annotates: the rules set (`set_node_name`)
    ops: tuple[str, ...]  # the operators it holds ("aten.linear.default", ...)


@dataclass
class Step:
    action: str  # "all-int8", "promote" (one rung up) or "drop" (one rung down)
    layer: str | None
    promoted: tuple[str, ...]  # the layers promoted after this step
    sqnr_db: float | None  # PyTorch's quantized model vs float (the search's figure)
    pte_sqnr_db: float | None = None  # the lowered .pte on the host vs float (when this configuration was lowered)
    precision: str | None = None  # where the step put the layer: "int16", "float" ("int8": dropped to int8)
    rules: dict[str, str] = field(default_factory=dict)  # every promoted layer's precision after this step


@dataclass
class Cost:
    """What one configuration costs on the target, from its delegation report."""

    estimate_by: str | None  # who estimates ("Vela's estimate", "Neutron estimate"); None: no estimate
    cycles: int | None
    inference_seconds: float | None
    memory: dict[str, int]  # place ("SRAM", "flash", "DRAM") -> required bytes
    cpu_nodes: int
    pte_bytes: int

    @classmethod
    def of(cls, result: LoweringResult) -> "Cost":
        report = result.report
        est = report.estimate or {}
        memory = {t["where"]: t["required_bytes"] for t in report.memory.totals()} if report.memory else {}
        return cls(est.get("by"), est.get("cycles"), est.get("inference_seconds"), memory, len(report.rejections),
                   len(result.pte))


@dataclass
class Rung:
    """Where the search left one rung of the ladder it went beyond (the int16 rung when it went on to float): that
    configuration lowered, with its .pte's SQNR and cost."""

    precision: str
    rules: dict[str, str]
    sqnr_db: float  # its .pte on the host vs float
    cost: Cost
    lowering: LoweringResult | None = field(default=None, repr=False)


@dataclass
class AutoPrecisionResult:
    target: str
    sqnr_target_db: float
    promote_to: str  # the highest precision the chosen configuration uses ("int16" or "float"; the ladder's first)
    samples: int
    layers: list[Layer]
    sensitivity: dict[str, float]  # layer -> SQNR (dB) of the quantized model with that layer alone promoted
    steps: list[Step]
    rules: dict[str, str]  # the chosen layers -> precision
    sqnr_db: float  # the chosen .pte on the host vs float
    baseline_sqnr_db: float  # the all-int8 .pte on the host vs float
    reached: bool
    baseline: Cost
    cost: Cost
    message: str | None = None  # why the target was not reached
    lowering: LoweringResult | None = field(default=None, repr=False)  # the chosen configuration's lowering
    baseline_lowering: LoweringResult | None = field(default=None, repr=False)  # the all-int8 lowering
    ladder: tuple[str, ...] = ("float",)  # the precisions a layer climbs through after int8
    #: per rung the search entered: layer -> SQNR (dB) of the quantized model with that layer alone raised to the
    #: rung on top of the configuration so far (`sensitivity` is the first rung's)
    rung_sensitivity: dict[str, dict[str, float]] = field(default_factory=dict)
    rungs: list[Rung] = field(default_factory=list)  # the rungs the search went beyond, lowered with their cost

    def save(self, path):
        """Write the chosen configuration's .pte (as `LoweringResult.save`)."""
        return self.lowering.save(path)

    def to_dict(self) -> dict:
        def num(v):
            return str(v) if isinstance(v, float) and math.isinf(v) else v

        return {"target": self.target, "sqnr_target_db": self.sqnr_target_db, "promote_to": self.promote_to,
                "ladder": ["int8", *self.ladder],
                "samples": self.samples, "reached": self.reached, "message": self.message,
                "sqnr_db": num(self.sqnr_db), "baseline_sqnr_db": num(self.baseline_sqnr_db), "rules": self.rules,
                "layers": [{"name": la.name, "nodes": list(la.nodes), "ops": list(la.ops),
                            "sensitivity_sqnr_db": num(self.sensitivity.get(la.name)),
                            "rung_sensitivity_sqnr_db": {rung: num(found.get(la.name))
                                                         for rung, found in self.rung_sensitivity.items()}}
                           for la in self.layers],
                "steps": [{"action": s.action, "layer": s.layer, "precision": s.precision, "promoted": list(s.promoted),
                           "rules": dict(s.rules), "sqnr_db": num(s.sqnr_db), "pte_sqnr_db": num(s.pte_sqnr_db)}
                          for s in self.steps],
                "rungs": [{"precision": r.precision, "rules": r.rules, "sqnr_db": num(r.sqnr_db), "cost": vars(r.cost)}
                          for r in self.rungs],
                "cost": {"all-int8": vars(self.baseline), "chosen": vars(self.cost)}}

    def cost_table(self) -> str:
        """The cost of each step of the ladder: all-int8, where each rung the search went beyond ended, the
        chosen configuration."""
        rows = [("configuration", ".pte SQNR", self.baseline.estimate_by or "estimate", "time", "CPU nodes",
                 *(f"{p} bytes" for p in self.cost.memory), ".pte bytes")]
        configurations = [("all-int8", self.baseline_sqnr_db, self.baseline)]
        configurations += [(f"{r.precision} rung ({len(r.rules)} layer(s))", r.sqnr_db, r.cost) for r in self.rungs]
        configurations.append(("chosen", self.sqnr_db, self.cost))
        for name, sq, c in configurations:
            rows.append((name, _db(sq), "n/a" if c.cycles is None else f"{c.cycles:,} cycles",
                         "n/a" if c.inference_seconds is None else f"{c.inference_seconds * 1e6:.1f} us",
                         str(c.cpu_nodes), *(f"{c.memory.get(p, 0):,}" for p in self.cost.memory),
                         f"{c.pte_bytes:,}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
                         for r in rows)

    def __str__(self) -> str:
        head = (f"automatic mixed precision on {self.target}: target {self.sqnr_target_db:g} dB SQNR vs float on "
                f"{self.samples} sample(s); ladder {' -> '.join(('int8', *self.ladder))}")
        lines = [head]
        for i, (rung, found) in enumerate(self.rung_sensitivity.items()):
            base = (f"all-int8 {_db(self.steps[0].sqnr_db)}" if i == 0 else
                    "on top of the layers raised so far")
            lines.append(f"sensitivity to {rung} (quantized PyTorch, one layer raised alone; {base}):")
            for la in sorted((la for la in self.layers if la.name in found), key=lambda la: -_rank(found[la.name])):
                lines.append(f"  {la.name:<24} {_db(found[la.name]):>9}  ({', '.join(la.ops)})")
        lines.append("search:")
        for s in self.steps:
            what = s.action if s.layer is None else f"{s.action} {s.layer}" + (f" to {s.precision}" if s.precision
                                                                                else "")
            pte = f", .pte {_db(s.pte_sqnr_db)}" if s.pte_sqnr_db is not None else ""
            lines.append(f"  {what:<32} quantized PyTorch {_db(s.sqnr_db)}{pte}")
        chosen = ", ".join(f"{k}={v}" for k, v in self.rules.items()) or "none (all-int8 reaches the target)"
        lines.append(f"chosen: {chosen}; the .pte reaches {_db(self.sqnr_db)} "
                     f"(all-int8 {_db(self.baseline_sqnr_db)})")
        if self.message:
            lines.append(self.message)
        return "\n".join(lines + ["", self.cost_table()])


def _db(v: float | None) -> str:
    return "n/a" if v is None else "inf dB" if math.isinf(v) else f"{v:.1f} dB"


def _rank(v: float | None) -> float:
    return -math.inf if v is None else v


def _tuple(x) -> tuple:
    return (x,) if isinstance(x, torch.Tensor) else tuple(x)


def _outputs(module, samples: list[tuple]) -> list[list[np.ndarray]]:
    """Per sample, the flattened outputs as float64 arrays."""
    out = []
    with torch.no_grad():
        for x in samples:
            leaves, _ = torch.utils._pytree.tree_flatten(module(*(t.clone() for t in x)))
            out.append([t.detach().numpy().astype(np.float64) for t in leaves if isinstance(t, torch.Tensor)])
    return out


def worst_sqnr(reference: list[list[np.ndarray]], test: list[list[np.ndarray]]) -> float:
    """The lowest SQNR (dB) over the outputs, each over every sample (numerics.sqnr, as `compare` measures it)."""
    values = [sqnr(np.stack([r[i] for r in reference]), np.stack([t[i] for t in test]))
              for i in range(len(reference[0]))]
    values = [v for v in values if v is not None]
    return min(values) if values else math.inf


def find_layers(model: torch.nn.Module, inputs: tuple, quantizer) -> list[Layer]:
    """The candidate layers, in graph order, of the graph `quantizer.annotate` sees (inside prepare_pt2e, after its
    own rewrites): the node names are those of every later quantization of the same model."""
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

    recorder = _Recorder(quantizer)
    prepare_pt2e(torch.export.export(copy.deepcopy(model), inputs, strict=False).module(), recorder)
    return recorder.layers


class _Recorder(Quantizer):
    """A quantizer that reads the layers off the graph it is given to annotate, then lets `inner` annotate it."""

    def __init__(self, inner) -> None:
        super().__init__()
        self.inner, self.layers = inner, []

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return self.inner.transform_for_annotation(model)

    def annotate(self, model: GraphModule) -> GraphModule:
        self.layers = _layers_of(model)
        return self.inner.annotate(model)

    def validate(self, model: GraphModule) -> None:
        self.inner.validate(model)


def _layers_of(gm: GraphModule) -> list[Layer]:
    annotated = {str(op) for op in ANNOTATORS}
    owner: dict[Node, str] = {}
    found: dict[str, list[Node]] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or str(node.target) not in annotated:
            continue
        producer = node.args[0] if node.args else None
        if str(node.target).rsplit(".", 1)[0] in _FOLLOWERS and producer in owner:
            key = owner[producer]
        else:
            stack = [name for name, _ in (node.meta.get("nn_module_stack") or {}).values() if name]
            key = stack[-1] if stack else node.name
        owner[node] = key
        found.setdefault(key, []).append(node)
    return [Layer(key, tuple(n.name for n in nodes), tuple(dict.fromkeys(str(n.target) for n in nodes)))
            for key, nodes in found.items()]


class _Search:
    """One search: the model, its samples and float outputs, and the quantizer of a configuration (layer -> its
    precision; a layer not in it stays int8)."""

    def __init__(self, model, inputs, calibration, spec):
        self.model, self.inputs, self.calibration, self.spec = model, inputs, calibration, spec

    def quantizer(self, config: dict):
        q = quantizer_for(self.spec.target, constraints=self.spec.constraints)
        rules = getattr(q, "neutron", q)  # NeutronCortexMQuantizer: its Neutron quantizer holds the rules
        for layer, precision in config.items():
            for node in layer.nodes:
                rules.set_node_name(node, precision)
        return q

    def quantized_sqnr(self, config: dict, samples, floats) -> float:
        quantized = quantize(self.model, self.inputs, self.calibration, self.quantizer(config))
        return worst_sqnr(floats, _outputs(quantized, samples))

    def lower(self, config: dict, samples) -> tuple[LoweringResult, float]:
        """The lowering of a configuration and its .pte's SQNR vs float on the host (`numerics.compare`)."""
        result = lower(self.model, self.inputs, self.calibration, spec=self.spec, quantizer=self.quantizer(config))
        cmp = compare(self.model, result=result, samples=samples)
        values = [o.sqnr_db for o in cmp.outputs if o.sqnr_db is not None]
        return result, min(values) if values else math.inf


def auto_precision(model: torch.nn.Module, inputs, calibration_inputs: Iterable, target: str | None = None, *,
                   sqnr_db: float, samples: Iterable | None = None, max_samples: int = 32,
                   candidates: Iterable[str] | None = None, progress: Callable | None = None,
                   allow_cpu_only: bool = False, **lower_options) -> AutoPrecisionResult:
    """Raise the most sensitive layers, int8 -> int16 (where the target's NPU computes it) -> float, until the lowered
    model reaches `sqnr_db` (dB, vs the float model).

    model, inputs, calibration_inputs, target, lower_options: as for `lower()` (spec=..., intermediates_dir=...,
        sram_budget=..., held against the chosen configuration; not quantizer or quantize_model: the search builds
        the quantizer of each configuration).
    samples: the input tuples the SQNR is measured on (default: the first `max_samples` calibration samples).
    candidates: the layers the search may promote (names as `find_layers` gives them: "fc1", "backbone.conv2");
        default every layer.
    progress: a tqdm-like factory: a bar over the layers measured and one over the search's steps.
    allow_cpu_only: the search keeps at least one layer on the NPU (int8 or int16) unless this is True; a target
        only the all-float model reaches is then reported (with what the all-float program costs) and the best
        configuration that keeps NPU work is returned.
    """
    for option in ("quantizer", "quantize_model"):
        if option in lower_options:
            raise ValueError(f"auto_precision builds its own quantizer per configuration: drop {option}= (the model "
                             f"must be the float model)")
    if not isinstance(sqnr_db, (int, float)) or not math.isfinite(sqnr_db):
        raise ValueError(f"sqnr_db={sqnr_db!r}: give the accuracy target as a finite number of dB, e.g. 30")
    budgets = {k: None if (v := lower_options.pop(f"{k}_budget", None)) is None else parse_size(v)
               for k in ("sram", "flash")}  # held against the chosen configuration (as lower() does)
    spec = resolve_spec(target, lower_options.pop("spec", None), **lower_options)
    inputs = _tuple(inputs)
    calibration = [_tuple(s) for s in calibration_inputs] if calibration_inputs is not None else []
    if not calibration:
        raise LoweringError("auto_precision measures each layer on the calibration data, and calibration_inputs "
                            "is empty: pass a list of input tuples with representative data")
    samples = [_tuple(s) for s in samples] if samples is not None else calibration[:max_samples]
    if isinstance(model, torch.nn.Module) and not isinstance(model, torch.fx.GraphModule):
        model = copy.deepcopy(model).eval()
    target_info = spec.target_info
    ladder = ("int16", "float") if "int16" in getattr(target_info, "activation_dtypes", ("int8",)) else ("float",)
    levels = ("int8", *ladder)
    search = _Search(model, inputs, calibration, spec)
    floats = _outputs(model, samples)
    found_layers = find_layers(model, inputs, search.quantizer({}))
    layers = _allowed(found_layers, candidates)
    keep_npu = not allow_cpu_only
    # the most layers a configuration may keep float: all but one, unless another layer is no candidate
    max_float = len(layers) - (keep_npu and len(layers) == len(found_layers))

    def floated(config) -> int:
        return sum(p == "float" for p in config.values())

    base = search.quantized_sqnr({}, samples, floats)
    steps = [Step("all-int8", None, (), base)]
    config: dict[Layer, str] = {}
    current = base
    sensitivity: dict[str, dict[str, float]] = {}  # rung -> layer -> SQNR with it alone raised to the rung
    orders: dict[str, list[Layer]] = {}
    ended: list[tuple[str, dict]] = []  # (rung, configuration) where the search left a rung for the next
    bar = progress(total=len(layers) * len(ladder), desc="promoting", unit="step") if progress else None
    for rung in ladder:  # greedy, on PyTorch's quantized model, one rung after the other
        if current >= sqnr_db or (rung == "float" and floated(config) >= max_float):
            break
        if config:  # the rung below ends here
            ended.append((ladder[ladder.index(rung) - 1], dict(config)))
        todo = [la for la in layers if config.get(la) != rung]
        found = sensitivity[rung] = {}
        for layer in _bar(progress, todo, f"layer sensitivity to {rung}", "layer"):
            found[layer.name] = search.quantized_sqnr({**config, layer: rung}, samples, floats)
        orders[rung] = order = sorted(todo, key=lambda la: -_rank(found[la.name]))
        for layer in order:
            if current >= sqnr_db or (rung == "float" and floated(config) >= max_float):
                break
            config[layer] = rung
            current = search.quantized_sqnr(config, samples, floats)
            steps.append(Step("promote", layer.name, _names(config), current, precision=rung, rules=_rules(config)))
            if bar is not None:
                bar.update(1)
    if current >= sqnr_db:  # one rung down for each raised layer the target does not need, least sensitive first
        for layer in sorted(config, key=lambda la: _rank(sensitivity[config[la]].get(la.name))):
            down = levels[levels.index(config[layer]) - 1]
            trial = {la: (down if la is layer else p) for la, p in config.items() if la is not layer or down != "int8"}
            if not trial:
                continue  # all-int8 misses the target
            value = search.quantized_sqnr(trial, samples, floats)
            if value >= sqnr_db:
                config, current = trial, value
                steps.append(Step("drop", layer.name, _names(config), value, precision=down, rules=_rules(config)))

    baseline, baseline_sqnr = search.lower({}, samples)
    steps[0].pte_sqnr_db = baseline_sqnr
    chosen, chosen_sqnr = (baseline, baseline_sqnr) if not config else search.lower(config, samples)
    steps[-1].pte_sqnr_db = chosen_sqnr

    def better(a, b):  # (sqnr, lowering, config): keeping NPU work first (unless allowed), then the SQNR
        return max(a, b, key=lambda c: (_keeps_npu(c[1]) or not keep_npu, c[0]))

    best = better((baseline_sqnr, baseline, {}), (chosen_sqnr, chosen, dict(config)))
    pending = _pending(config, ladder, orders, layers)
    while chosen_sqnr < sqnr_db and pending:  # the .pte misses what the quantized model reached: raise on
        layer, rung = pending.pop(0)
        if levels.index(config.get(layer, "int8")) >= levels.index(rung) or (
                rung == "float" and floated(config) >= max_float):
            continue
        config[layer] = rung
        chosen, chosen_sqnr = search.lower(config, samples)
        steps.append(Step("promote", layer.name, _names(config), None, chosen_sqnr, rung, _rules(config)))
        best = better(best, (chosen_sqnr, chosen, dict(config)))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    rungs = []
    for rung, where in ended:  # the cost of each rung the search went beyond, from its lowering
        result, value = (chosen, chosen_sqnr) if where == config else search.lower(where, samples)
        rungs.append(Rung(rung, _rules(where), value, Cost.of(result), result))
        best = better(best, (value, result, where))
    if best[1] is not chosen and spec.intermediates_dir:  # its files in intermediates_dir, not the last lowering's
        best = (best[0], search.lower(best[2], samples)[0], best[2])
    chosen_sqnr, chosen, config = best
    chosen.check_budget(**budgets)
    message = None
    if chosen_sqnr < sqnr_db and keep_npu and candidates is None and layers:
        cpu_only = search.lower({la: "float" for la in layers}, samples)[0]
        cost = Cost.of(cpu_only)
        memory = ", ".join(f"{place} {n:,} B" for place, n in cost.memory.items())
        message = (f"accuracy target {sqnr_db:g} dB needs the whole model on the CPU of {target_info.name}: the best "
                   f"configuration that keeps NPU work reaches {_db(chosen_sqnr)} (all-int8 {_db(baseline_sqnr)}); "
                   f"the all-float program would run {cost.cpu_nodes} node(s) on the CPU and none on the NPU "
                   f"({cost.pte_bytes:,} .pte bytes; {memory}); returning the best configuration that keeps NPU work "
                   f"(allow_cpu_only=True, --allow-cpu-only, accepts the CPU-only program)")
        log.warning("warning: %s", message)
    elif chosen_sqnr < sqnr_db:
        message = (f"accuracy target {sqnr_db:g} dB not reachable on {target_info.name}: with each of the "
                   f"{len(layers)} candidate layer(s) promoted up to {ladder[-1]} the best .pte reaches "
                   f"{_db(chosen_sqnr)} (all-int8 {_db(baseline_sqnr)}); returning the best configuration found")
        log.warning("warning: %s", message)
    return AutoPrecisionResult(
        target_info.name, float(sqnr_db), config_rung(config, levels) if config else ladder[0], len(samples), layers,
        dict(sensitivity.get(ladder[0], {})), steps, _rules(config), chosen_sqnr, baseline_sqnr,
        chosen_sqnr >= sqnr_db, Cost.of(baseline), Cost.of(chosen), message, chosen, baseline, ladder,
        sensitivity, rungs)


def config_rung(config: dict, levels: tuple[str, ...]) -> str:
    """The highest precision of a configuration, in ladder order."""
    return max(config.values(), key=levels.index, default=levels[0])


def _pending(config: dict, ladder: tuple[str, ...], orders: dict, layers: list[Layer]) -> list[tuple[Layer, str]]:
    """The promotions left, in the search's order: the rest of the current rung, then the rungs above it (in their
    measured order, else the first rung's, else graph order)."""
    levels = ("int8", *ladder)
    start = levels.index(config_rung(config, levels)) if config else 1
    out = []
    for rung in levels[max(start, 1):]:
        order = orders.get(rung) or orders.get(ladder[0]) or layers
        out += [(la, rung) for la in order]
    return out


def _rules(config: dict) -> dict[str, str]:
    return {la.name: p for la, p in config.items()}


def _keeps_npu(result: LoweringResult) -> bool:
    return bool(result.report.partitions)


def _allowed(layers: list[Layer], candidates: Iterable[str] | None) -> list[Layer]:
    if candidates is None:
        return layers
    wanted = list(candidates)
    unknown = [c for c in wanted if c not in {la.name for la in layers}]
    if unknown:
        raise ValueError(f"candidates {', '.join(unknown)}: the model has no such layer; its layers are: "
                         f"{', '.join(la.name for la in layers)}")
    return [la for la in layers if la.name in wanted]


def _names(layers) -> tuple[str, ...]:
    return tuple(la.name for la in layers)


def _bar(progress, items: list, desc: str, unit: str):
    return progress(items, desc=desc, unit=unit) if progress else items


def search_for_cli(args, model, inputs, calibration, target: str, progress, spec_options: dict) -> LoweringResult:
    """`compile --accuracy-target SQNR_DB`: run the search, print the choice and its cost; the chosen lowering."""
    from ..models.loading import UserError

    if args.qat:
        raise UserError("--accuracy-target searches the precision of each layer of a float model, and --qat gives an "
                        "already quantized one", "drop --qat (pass the float model) or drop --accuracy-target")
    runtime_log = io.StringIO()  # the host runtime's own lines ("[cpuinfo_utils.cpp:125] ..."): to the debug log
    with contextlib.redirect_stderr(runtime_log):
        result = auto_precision(model, inputs, calibration, target, sqnr_db=args.accuracy_target,
                                progress=progress, allow_cpu_only=args.allow_cpu_only, **spec_options)
    if runtime_log.getvalue().strip():
        log.debug("%s", runtime_log.getvalue().rstrip())
    print(result, end="\n\n")
    return result.lowering

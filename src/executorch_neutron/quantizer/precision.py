"""Which precision each node of a model is quantized to: the quantizer's per-layer precision configuration.

A `PrecisionConfig` holds a global precision and rules, each `int8`, `int16` or `float`:

    config = PrecisionConfig("int8")
    config.set("module_type", "torch.nn.modules.conv.Conv2d", "int16")
    config.set("module_name", "head", "float")        # "head" and everything under it; globs: "conv*"
    config.set("operator", "aten.softmax.int", "float")
    config.set("node", "conv2d_3", "int16")           # a node of the exported graph (as `prepare_pt2e` sees it)

`of(node)` resolves one node: the rules of the most specific kind that match it win (global < module type <
module name < operator < node), and among rules of one kind the one set last. A module rule matches a node when
any module on the node's `nn_module_stack` matches (so "backbone" covers "backbone.conv1").
`check(graph_module)` refuses rules that name nothing in the model: the error lists the model's names.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from torch.fx import GraphModule, Node

PRECISIONS = ("int8", "int16", "float")
#: rule kinds, from the least to the most specific
KINDS = ("module_type", "module_name", "operator", "node")
#: the partitioner's reason for a node the configuration keeps float
KEPT_FLOAT_REASON = "kept float by the quantization config"


@dataclass(frozen=True)
class Rule:
    kind: str  # one of KINDS
    key: str  # a qualified module type, a module name (glob), an operator ("aten.conv2d.default", "aten.conv2d"), a node name
    precision: str  # one of PRECISIONS


def check_precision(precision: str, what: str = "precision") -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown {what} {precision!r}: valid values are {', '.join(PRECISIONS)}")
    return precision


class PrecisionConfig:
    """A global precision and per-module-type / module-name / operator / node rules (see the module docstring)."""

    def __init__(self, default: str = "int8") -> None:
        self.default = check_precision(default)
        self.rules: list[Rule] = []

    def set(self, kind: str, key: str, precision: str) -> "PrecisionConfig":
        if kind not in KINDS:
            raise ValueError(f"unknown rule kind {kind!r}: valid kinds are {', '.join(KINDS)}")
        self.rules.append(Rule(kind, key, check_precision(precision)))
        return self

    def precisions(self) -> set[str]:
        """Every precision the configuration can give a node."""
        return {self.default, *(r.precision for r in self.rules)}

    def of(self, node: Node) -> str:
        best, best_rank = self.default, -1
        for rule in self.rules:
            rank = KINDS.index(rule.kind)
            if rank >= best_rank and _matches(rule, node):
                best, best_rank = rule.precision, rank
        return best

    def check(self, model: GraphModule) -> None:
        """Raise ValueError for a module name or node name rule that matches nothing in `model`."""
        nodes = [n for n in model.graph.nodes if n.op == "call_function"]
        for rule in self.rules:
            if rule.kind in ("module_name", "node") and not any(_matches(rule, n) for n in nodes):
                names = module_names(model) if rule.kind == "module_name" else [n.name for n in nodes]
                what = "module" if rule.kind == "module_name" else "node"
                raise ValueError(f"precision rule {rule.key}={rule.precision}: the model has no {what} "
                                 f"{rule.key!r}; its {what}s are: {', '.join(names) or '(none)'}")


def module_names(model: GraphModule) -> list[str]:
    """The module names of an exported model, as its nodes' `nn_module_stack` records them, in graph order."""
    seen: dict[str, None] = {}
    for node in model.graph.nodes:
        for name, _ in (node.meta.get("nn_module_stack") or {}).values():
            if name:
                seen.setdefault(name, None)
    return list(seen)


def qualified_name(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _matches(rule: Rule, node: Node) -> bool:
    if rule.kind == "node":
        return node.name == rule.key
    if rule.kind == "operator":
        name = _operator_name(node)
        return name == rule.key or name.rsplit(".", 1)[0] == rule.key  # "aten.conv2d" names every overload
    for name, kind in (node.meta.get("nn_module_stack") or {}).values():
        if rule.kind == "module_type":
            if (kind if isinstance(kind, str) else qualified_name(kind)) == rule.key:
                return True
        elif name == rule.key or name.startswith(rule.key + ".") or fnmatch.fnmatchcase(name, rule.key):
            return True
    return False


def _operator_name(node: Node) -> str:
    """"aten.conv2d.default" for torch.ops.aten.conv2d.default."""
    return str(node.target)

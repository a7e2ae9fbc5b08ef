"""Which precision each node of a model is quantized to: the quantizer's per-layer precision configuration.

A `PrecisionConfig` holds a global precision and rules, each `int8`, `int16` or `float`:

    config = PrecisionConfig("int8")
    config.set("module_type", "torch.nn.modules.conv.Conv2d", "int16")   # or the bare class name "Conv2d"
    config.set("module_name", "head", "float")        # "head" and everything under it; globs: "conv*"
    config.set("operator", "aten.softmax.int", "float")
    config.set("node", "conv2d_3", "int16")           # a node of the exported graph (as `prepare_pt2e` sees it)

`of(node)` resolves one node: the rules of the most specific kind that match it win (global < module type <
module name < operator < node); among module rules of one kind, the one matching the innermost module of the
node's `nn_module_stack` wins ("head.0" over "head"); then the one set last. `check(graph_module)` refuses
module, module-type and node rules that name nothing in the model (the error lists the model's names of that kind);
an operator rule the model has no use for is logged and ignored, so that one file serves several models.

The one text form (`parse`, used by `lower(precision=...)`, the recipes and the CLI's `--precision`): items
`KEY=PRECISION` separated by commas (or new lines in a file; `#` starts a comment), KEY being

    default            the global precision          default=int8
    NAME | module:NAME a module name or glob         head=float, conv*=int16, module:backbone.0=float
    type:CLASS         a module type                 type:Conv2d=int16, type:torch.nn.modules.conv.Conv2d=int16
    op:OPERATOR        an ATen operator              op:aten.softmax=float, op:aten.conv2d.default=int16
    node:NAME          a node of the exported graph  node:conv2d_3=int16

or `@FILE`: that text in a file, or a JSON object / TOML table of the same keys (`{"head": "float"}`).
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from ..core.meta_keys import SOURCE_OP

if TYPE_CHECKING:
    from torch.fx import GraphModule, Node

logger = logging.getLogger(__name__)

PRECISIONS = ("int8", "int16", "float")
#: rule kinds, from the least to the most specific
KINDS = ("module_type", "module_name", "operator", "node")
#: the partitioner's reason for a node the configuration keeps float
KEPT_FLOAT_REASON = "kept float by the quantization config"
#: the key of `node.meta["custom"]` the quantizer sets on nodes the configuration keeps float (it survives export)
KEPT_FLOAT_META = "executorch_neutron_kept_float"
#: the text form's prefixes -> rule kinds (a key without a prefix is a module name)
PREFIXES = {"module": "module_name", "type": "module_type", "op": "operator", "node": "node"}
SYNTAX = ("KEY=PRECISION items separated by commas, KEY being default, a module name or glob (head, conv*), "
          "type:Conv2d, op:aten.softmax or node:conv2d_3, PRECISION int8, int16 or float "
          "(e.g. \"head=float,type:Conv2d=int16\"), or @FILE")


class PrecisionError(ValueError):
    """A precision setting that is malformed, names nothing in the model, or asks what the target cannot do."""


@dataclass(frozen=True)
class Rule:
    kind: str  # one of KINDS
    key: str  # a module type (qualified or bare class name), a module name (glob), an operator, a node name
    precision: str  # one of PRECISIONS


def check_precision(precision: str, what: str = "precision") -> str:
    if precision not in PRECISIONS:
        raise PrecisionError(f"unknown {what} {precision!r}: valid values are {', '.join(PRECISIONS)}")
    return precision


class PrecisionConfig:
    """A global precision and per-module-type / module-name / operator / node rules (see the module docstring)."""

    def __init__(self, default: str = "int8") -> None:
        self.default = check_precision(default)
        self.rules: list[Rule] = []

    def __repr__(self) -> str:
        return f"PrecisionConfig({to_text(self.default, self.rules)!r})"

    def set(self, kind: str, key: str, precision: str) -> "PrecisionConfig":
        if kind not in KINDS:
            raise PrecisionError(f"unknown rule kind {kind!r}: valid kinds are {', '.join(KINDS)}")
        self.rules.append(Rule(kind, key, check_precision(precision)))
        return self

    def precisions(self) -> set[str]:
        """Every precision the configuration can give a node."""
        return {self.default, *(r.precision for r in self.rules)}

    def of(self, node: "Node") -> str:
        best, best_rank = self.default, (-1, -1)
        for rule in self.rules:
            depth = _match_depth(rule, node)
            if depth is not None and (KINDS.index(rule.kind), depth) >= best_rank:
                best, best_rank = rule.precision, (KINDS.index(rule.kind), depth)
        return best

    def check(self, model: "GraphModule") -> None:
        """Raise PrecisionError for a module, module-type or node rule that matches nothing in `model` (a misspelling:
        the error lists the model's names of that kind, the closest first). An operator rule that matches nothing is
        only logged: one precision file may serve several models, and a model without softmax has nothing to keep
        float for `op:aten.softmax=float`."""
        nodes = [n for n in model.graph.nodes if n.op == "call_function"]
        for rule in self.rules:
            if any(_match_depth(rule, n) is not None for n in nodes):
                continue
            what, names = {
                "module_name": ("module", lambda: module_names(model)),
                "module_type": ("module type", lambda: module_types(model)),
                "operator": ("operator", lambda: list(dict.fromkeys(o for n in nodes for o in operator_names(n)))),
                "node": ("node", lambda: [n.name for n in nodes]),
            }[rule.kind]
            listed = names()
            close = difflib.get_close_matches(rule.key, listed, n=1, cutoff=0.6)
            guess = f" (did you mean {close[0]!r}?)" if close else ""
            text = (f"precision rule {_key_text(rule)}={rule.precision}: the model has no {what} {rule.key!r}{guess}; "
                    f"its {what}s are: {', '.join(listed) or '(none)'}")
            if rule.kind == "operator":
                logger.warning("%s (the rule is ignored for this model)", text)
                continue
            raise PrecisionError(text)


def module_names(model: "GraphModule") -> list[str]:
    """The module names of an exported model, as its nodes' `nn_module_stack` records them, in graph order."""
    seen: dict[str, None] = {}
    for node in model.graph.nodes:
        for name, _ in (node.meta.get("nn_module_stack") or {}).values():
            if name:
                seen.setdefault(name, None)
    return list(seen)


def module_types(model: "GraphModule") -> list[str]:
    """The qualified module types of an exported model's submodules, in graph order."""
    seen: dict[str, None] = {}
    for node in model.graph.nodes:
        for name, kind in (node.meta.get("nn_module_stack") or {}).values():
            if name:
                seen.setdefault(_type_name(kind), None)
    return list(seen)


def operator_names(node: "Node") -> tuple[str, ...]:
    """The node's operator, then the one the model wrote, if an ATen rewrite made the node from another
    (cosine_similarity's pieces name aten.cosine_similarity.default)."""
    own = str(node.target)
    source = node.meta.get(SOURCE_OP)
    return (own,) if source in (None, own) else (own, source)


def qualified_name(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _type_name(kind) -> str:
    return kind if isinstance(kind, str) else qualified_name(kind)


def _match_depth(rule: Rule, node: "Node") -> int | None:
    """None when `rule` does not match `node`; else how deep the matched module is (0 for operator and node rules)."""
    if rule.kind == "node":
        return 0 if node.name == rule.key else None
    if rule.kind == "operator":  # the node's operator, or the one the model wrote that a rewrite made it from
        for name in operator_names(node):  # "aten.conv2d.default"; "aten.conv2d" names every overload
            if name == rule.key or name.rsplit(".", 1)[0] == rule.key:
                return 0
        return None
    depth = None
    for name, kind in (node.meta.get("nn_module_stack") or {}).values():
        if not name:  # the model itself: a rule on it is the global setting
            continue
        if rule.kind == "module_type":
            qualified = _type_name(kind)
            found = qualified == rule.key or qualified.rsplit(".", 1)[-1] == rule.key
        else:
            found = name == rule.key or fnmatch.fnmatchcase(name, rule.key)
        if found:
            depth = max(depth or 0, name.count(".") + 1)
    return depth


# -- the text form ---------------------------------------------------------------------------------------------

def parse(spec: "str | Mapping[str, str] | PrecisionConfig | None") -> tuple[str | None, list[Rule]]:
    """(the global precision or None, the rules, in order) of the text form, `@FILE`, a mapping or a config."""
    if spec is None:
        return None, []
    if isinstance(spec, PrecisionConfig):
        return spec.default, list(spec.rules)
    if isinstance(spec, Mapping):
        return _items(spec.items(), "the precision mapping")
    if not isinstance(spec, str):
        raise TypeError(f"precision takes a string ({SYNTAX}), a mapping or a PrecisionConfig, "
                        f"not {type(spec).__name__}")
    if spec.strip().startswith("@"):
        return _parse_file(Path(spec.strip()[1:]))
    return _parse_text(spec, "precision")


def _parse_file(path: Path) -> tuple[str | None, list[Rule]]:
    if not path.is_file():
        raise PrecisionError(f"precision file {path} does not exist: give @FILE with {SYNTAX.split(', or @')[0]}")
    text = path.read_text()
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PrecisionError(f"precision file {path} is not valid JSON ({exc}): expected an object such as "
                             f"{{\"default\": \"int8\", \"head\": \"float\"}}") from None
        if not isinstance(data, dict):
            raise PrecisionError(f"precision file {path}: expected a JSON object such as {{\"head\": \"float\"}}")
        return _items(data.items(), f"precision file {path}")
    if path.suffix == ".toml":
        import tomllib

        try:
            return _items(tomllib.loads(text).items(), f"precision file {path}")
        except tomllib.TOMLDecodeError as exc:
            raise PrecisionError(f"precision file {path} is not valid TOML ({exc}): expected lines such as "
                             f"'\"type:Conv2d\" = \"int16\"'") from None
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    return _parse_text(",".join(lines), f"precision file {path}")


def _parse_text(text: str, where: str) -> tuple[str | None, list[Rule]]:
    items = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        key, sep, value = item.rpartition("=")
        if not sep or not key.strip():
            raise PrecisionError(f"{where}: {item!r} is not KEY=PRECISION; expected {SYNTAX}")
        items.append((key.strip(), value.strip()))
    return _items(items, where)


def _items(items, where: str) -> tuple[str | None, list[Rule]]:
    default, rules = None, []
    for key, value in items:
        if not isinstance(key, str) or not isinstance(value, str) or value not in PRECISIONS or not key.strip():
            raise PrecisionError(f"{where}: {key}={value} is not KEY=PRECISION with PRECISION int8, int16 or float; "
                             f"expected {SYNTAX}")
        if key in ("default", "global"):
            default = value
            continue
        prefix, sep, name = key.partition(":")
        kind = PREFIXES.get(prefix) if sep else "module_name"
        if kind is None or not (name if sep else key).strip():
            raise PrecisionError(f"{where}: unknown key {key!r} (prefixes: {', '.join(p + ':' for p in PREFIXES)}); "
                             f"expected {SYNTAX}")
        rules.append(Rule(kind, (name if sep else key).strip(), value))
    return default, rules


def _key_text(rule: Rule) -> str:
    prefix = {v: k for k, v in PREFIXES.items()}[rule.kind]
    return rule.key if rule.kind == "module_name" else f"{prefix}:{rule.key}"


def to_text(default: str | None, rules: list[Rule]) -> str:
    """The text form of a configuration (what `parse` reads back)."""
    return ",".join(([f"default={default}"] if default else []) + [f"{_key_text(r)}={r.precision}" for r in rules])

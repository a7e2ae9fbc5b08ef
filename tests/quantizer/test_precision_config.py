"""Per-layer precision (quantizer/precision.py, NeutronQuantizer.set_*): which rule wins for a node, the text form
(`--precision`, `@FILE`), the errors, and what the PT2E flow makes of a node kept float.

A rule's effect is read from PyTorch's own converted graph (`convert_pt2e`): a node kept float has no
dequantize on its weight and no quantize after it; the precedence tables use int16 as a marker value (the
`PrecisionConfig` itself knows no target) so that each case has three distinct outcomes.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
from quantizer_testing import QUANTIZE, input_dq, nodes, only, quantize_ptq

from executorch_neutron.quantizer import NeutronQuantizer
from executorch_neutron.quantizer.precision import (
    KEPT_FLOAT_META,
    PrecisionConfig,
    PrecisionError,
    parse,
    to_text,
)

pytestmark = pytest.mark.fast

aten = torch.ops.aten
X = (torch.randn(1, 3, 10, 7),)


class TwoStage(nn.Module):
    def __init__(self, softmax: bool = True):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
        self.head = nn.Sequential(nn.Conv2d(4, 5, 1), nn.Sigmoid())
        self.softmax = softmax  # an op of the model itself (no module of its own)

    def forward(self, x):
        y = self.head(self.body(x))
        return y.softmax(1) if self.softmax else y


@pytest.fixture(scope="module")
def graph():
    return torch.export.export(TwoStage().eval(), X).module()


def _node(graph, name):
    return next(n for n in graph.graph.nodes if n.name == name)


# (rules in the order set, node, expected): the exported graph's nodes are conv2d (body.0), relu (body.1),
# conv2d_1 (head.0), sigmoid (head.1), softmax (the model itself)
PRECEDENCE = {
    "global": ([], "conv2d", "int8"),
    "type_over_global": ([("module_type", "Conv2d", "int16")], "conv2d_1", "int16"),
    "name_over_type_set_earlier": ([("module_name", "head", "float"), ("module_type", "Conv2d", "int16")],
                                   "conv2d_1", "float"),
    "operator_over_name": ([("operator", "aten.conv2d", "int16"), ("module_name", "head", "float")],
                           "conv2d_1", "int16"),
    "node_over_operator": ([("node", "conv2d_1", "float"), ("operator", "aten.conv2d.default", "int16")],
                           "conv2d_1", "float"),
    "same_kind_later_wins": ([("module_name", "head", "float"), ("module_name", "head", "int16")],
                             "sigmoid", "int16"),
    "innermost_module_wins": ([("module_name", "head.1", "int16"), ("module_name", "head", "float")],
                              "sigmoid", "int16"),
    "innermost_type_wins": ([("module_type", "torch.nn.modules.activation.Sigmoid", "int16"),
                             ("module_type", "Sequential", "float")], "sigmoid", "int16"),
    "outer_type_elsewhere": ([("module_type", "torch.nn.modules.activation.Sigmoid", "int16"),
                              ("module_type", "Sequential", "float")], "relu", "float"),
    "glob": ([("module_name", "he*", "float")], "conv2d_1", "float"),
    "glob_misses": ([("module_name", "he*", "float")], "conv2d", "int8"),
    "glob_on_index": ([("module_name", "*.1", "int16")], "relu", "int16"),
    "parent_name_covers_children": ([("module_name", "body", "float")], "relu", "float"),
    "root_ops_only_global_or_operator": ([("module_name", "head", "float")], "softmax", "int8"),
    "operator_every_overload": ([("operator", "aten.softmax", "float")], "softmax", "float"),
}


@pytest.mark.parametrize("case", PRECEDENCE.values(), ids=PRECEDENCE.keys())
def test_precedence(graph, case):
    rules, node, expected = case
    config = PrecisionConfig("int8")
    for rule in rules:
        config.set(*rule)
    config.check(graph)
    assert config.of(_node(graph, node)) == expected


def test_quantizer_setters_take_classes_names_and_op_overloads(graph):
    q = (NeutronQuantizer().set_module_type(nn.Sigmoid, "float").set_operator_type(aten.relu.default, "float")
         .set_node_name("conv2d", "float"))
    assert [(r.kind, r.key) for r in q.precision.rules] == [
        ("module_type", "torch.nn.modules.activation.Sigmoid"), ("operator", "aten.relu.default"), ("node", "conv2d")]
    assert [q.precision.of(_node(graph, n)) for n in ("conv2d", "relu", "conv2d_1", "sigmoid")] == [
        "float", "float", "int8", "float"]


UNKNOWN = {
    "module": (("module_name", "haed"), "module", ["body", "body.0", "head", "head.1"]),
    "module_glob": (("module_name", "neck*"), "module", ["body", "head.0"]),
    "node": (("node", "conv2d_9"), "node", ["conv2d", "conv2d_1", "sigmoid"]),
    "module_type": (("module_type", "Conv3d"), "module type", ["torch.nn.modules.conv.Conv2d"]),
}


@pytest.mark.parametrize("case", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_unknown_name_is_refused_listing_the_models_names(graph, case):
    (kind, key), what, listed = case
    config = PrecisionConfig().set(kind, key, "float")
    with pytest.raises(PrecisionError) as err:
        config.check(graph)
    message = str(err.value)
    assert "\n" not in message and f"has no {what} {key!r}" in message
    for name in listed:
        assert name in message.split("are: ")[1]


def test_unknown_operator_is_logged_not_refused(graph, caplog):
    """One precision file serves several models: `op:aten.gelu=float` on a model without gelu is ignored, said once."""
    config = PrecisionConfig().set("operator", "aten.gelu", "float")
    with caplog.at_level("WARNING"):
        config.check(graph)
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "has no operator 'aten.gelu'" in text and "ignored" in text
    assert "aten.conv2d.default" in text and "aten.softmax.int" in text


def test_misspelt_module_names_the_closest_one(graph):
    with pytest.raises(PrecisionError, match=r"no module 'haed' \(did you mean 'head'\?\)"):
        PrecisionConfig().set("module_name", "haed", "float").check(graph)


def test_unknown_module_fails_prepare_with_the_list():
    with pytest.raises(PrecisionError, match=r"no module 'haed' \(did you mean 'head'\?\); its modules are: body, body.0, body.1, head"):
        quantize_ptq(TwoStage(), X, quantizer=NeutronQuantizer(precision="haed=float"))


INT16_ON_NEUTRON = {
    "activations": lambda: NeutronQuantizer("imxrt700", activations="int16"),
    "set_global": lambda: NeutronQuantizer("mcxn94x").set_global("int16"),
    "set_module_name": lambda: NeutronQuantizer("imx95").set_module_name("head", "int16"),
    "text": lambda: NeutronQuantizer("imxrt700", precision="head=float,type:Conv2d=int16"),
    "default_in_text": lambda: NeutronQuantizer("imxrt700", precision="default=int16"),
}


@pytest.mark.parametrize("make", INT16_ON_NEUTRON.values(), ids=INT16_ON_NEUTRON.keys())
def test_int16_is_refused_on_neutron_targets_in_one_line(make):
    with pytest.raises(PrecisionError) as err:
        make()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("int16 activations are not supported on ") and "use int8 or float" in message


def test_precision_rules_keep_nodes_float_in_the_converted_graph():
    gm = quantize_ptq(TwoStage(softmax=False), X, quantizer=NeutronQuantizer(precision="head=float"))
    body_conv, head_conv = nodes(gm, aten.conv2d.default)
    assert input_dq(gm, body_conv, body_conv.args[1]).dtype == torch.int8  # body quantized
    assert head_conv.args[1].op == "get_attr"  # float weight: no dequantize
    assert not any(u.target in QUANTIZE for u in only(gm, aten.sigmoid.default).users)


def test_kept_float_nodes_are_tagged_for_the_partitioner():
    q = NeutronQuantizer(precision="head=float")
    gm = torch.export.export(TwoStage().eval(), X).module()
    q.annotate(q.transform_for_annotation(gm))
    tagged = {n.name for n in gm.graph.nodes if (n.meta.get("custom") or {}).get(KEPT_FLOAT_META)}
    assert tagged == {"conv2d_1", "sigmoid"}


class Cosine(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.cosine_similarity(self.a(x), self.b(x), dim=1)


def test_an_operator_rule_names_an_op_the_rewrites_decompose():
    """cosine_similarity is rewritten into int8 table ops before annotation: a rule naming it keeps its pieces
    float (before, the rule matched nothing and was refused as an unknown operator) and leaves the linears alone."""
    q = NeutronQuantizer(precision="op:aten.cosine_similarity=float")
    gm = torch.export.export(Cosine().eval(), (torch.randn(4, 8),)).module()
    q.annotate(q.transform_for_annotation(gm))
    tagged = {str(n.target) for n in gm.graph.nodes if (n.meta.get("custom") or {}).get(KEPT_FLOAT_META)}
    assert "aten.rsqrt.default" in tagged and "aten.linear.default" not in tagged
    assert {str(n.target) for n in gm.graph.nodes if n.op == "call_function"} & tagged == tagged


def test_modules_to_skip_then_a_more_specific_rule():
    # modules_to_skip are float rules set first: a rule on an inner module overrides them
    q = NeutronQuantizer(modules_to_skip=["head"], precision="head.0=int8")
    gm = quantize_ptq(TwoStage(softmax=False), X, quantizer=q)
    _, head_conv = nodes(gm, aten.conv2d.default)
    assert input_dq(gm, head_conv, head_conv.args[1]).axis == 0  # head.0 quantized again
    assert not any(u.target in QUANTIZE for u in only(gm, aten.sigmoid.default).users)  # head.1 still float


def test_cortex_m_quantizer_honours_the_precision():
    from executorch_neutron.quantizer import NeutronCortexMQuantizer

    q = NeutronCortexMQuantizer(precision="head=float").set_operator_type("aten.softmax", "float")
    assert q.precision is q.neutron.precision and len(q.precision.rules) == 2
    gm = quantize_ptq(TwoStage(), X, quantizer=q)
    body_conv, head_conv = nodes(gm, aten.conv2d.default)
    assert input_dq(gm, body_conv, body_conv.args[1]).dtype == torch.int8
    assert head_conv.args[1].op == "get_attr"
    for op in (aten.sigmoid.default, aten.softmax.int):  # the Cortex-M quantizer would annotate both otherwise
        node = only(gm, op)
        assert not any(u.target in QUANTIZE for u in node.users), op
    # the reference: without the rules, the Cortex-M quantizer does quantize the softmax
    plain = quantize_ptq(TwoStage(), X, quantizer=NeutronCortexMQuantizer())
    assert any(u.target in QUANTIZE for u in only(plain, aten.softmax.int).users)


# --- the text form ----------------------------------------------------------------------------------------------

TEXT = {
    "module": ("head=float", None, [("module_name", "head", "float")]),
    "all_kinds": ("default=int16, type:Conv2d=int8,op:aten.softmax=float,node:conv2d_3=int16,module:conv*=float",
                  "int16", [("module_type", "Conv2d", "int8"), ("operator", "aten.softmax", "float"),
                            ("node", "conv2d_3", "int16"), ("module_name", "conv*", "float")]),
    "qualified_type": ("type:torch.nn.modules.conv.Conv2d=int8", None,
                       [("module_type", "torch.nn.modules.conv.Conv2d", "int8")]),
    "empty_items": (" head=float ,, ", None, [("module_name", "head", "float")]),
}


@pytest.mark.parametrize("case", TEXT.values(), ids=TEXT.keys())
def test_text_form(case):
    text, default, rules = case
    got_default, got = parse(text)
    assert got_default == default and [(r.kind, r.key, r.precision) for r in got] == rules
    assert parse(to_text(got_default, got)) == (got_default, got)  # the text form reads back


BAD_TEXT = {
    "no_equals": ("head:float", "'head:float' is not KEY=PRECISION"),
    "bad_precision": ("head=int4", "head=int4 is not KEY=PRECISION"),
    "bad_prefix": ("layer:head=float", "unknown key 'layer:head'"),
    "empty_name": ("type:=int8", "unknown key 'type:'"),
    "no_key": ("=float", "'=float' is not KEY=PRECISION"),
}


@pytest.mark.parametrize("case", BAD_TEXT.values(), ids=BAD_TEXT.keys())
def test_bad_text_is_one_line_with_the_expected_form(case):
    text, found = case
    with pytest.raises(PrecisionError) as err:
        parse(text)
    message = str(err.value)
    assert "\n" not in message and found in message and "type:Conv2d" in message and "@FILE" in message


FILES = {
    "text": ("p.txt", "# the head stays float\nhead=float\ntype:Conv2d=int8  # conv layers\n"),
    "json": ("p.json", json.dumps({"head": "float", "type:Conv2d": "int8"})),
    "toml": ("p.toml", 'head = "float"\n"type:Conv2d" = "int8"\n'),
}


@pytest.mark.parametrize("case", FILES.values(), ids=FILES.keys())
def test_file_forms(tmp_path, case):
    name, text = case
    (tmp_path / name).write_text(text)
    _, rules = parse(f"@{tmp_path / name}")
    assert [(r.kind, r.key, r.precision) for r in rules] == [("module_name", "head", "float"),
                                                             ("module_type", "Conv2d", "int8")]


def test_bad_files(tmp_path):
    with pytest.raises(PrecisionError, match="does not exist"):
        parse(f"@{tmp_path / 'missing.json'}")
    (tmp_path / "bad.json").write_text("{head: float}")
    with pytest.raises(PrecisionError, match="not valid JSON"):
        parse(f"@{tmp_path / 'bad.json'}")
    (tmp_path / "list.json").write_text('["head=float"]')
    with pytest.raises(PrecisionError, match="expected a JSON object"):
        parse(f"@{tmp_path / 'list.json'}")


def test_mapping_and_config_forms():
    assert parse({"default": "int8", "head": "float"})[0] == "int8"
    config = PrecisionConfig("int8").set("node", "conv2d", "float")
    assert parse(config) == ("int8", config.rules)
    with pytest.raises(TypeError, match="precision takes a string"):
        parse(3)


def test_cortex_m_quantizer_leaves_an_input_only_float_ops_read_float():
    from executorch_neutron.quantizer import NeutronCortexMQuantizer

    gm = quantize_ptq(TwoStage(), X, quantizer=NeutronCortexMQuantizer(precision="body.0=float"))
    body_conv, _ = nodes(gm, aten.conv2d.default)
    assert body_conv.args[0].op == "placeholder"  # no quantize / dequantize of x
    plain = quantize_ptq(TwoStage(), X, quantizer=NeutronCortexMQuantizer())
    assert nodes(plain, aten.conv2d.default)[0].args[0].op != "placeholder"

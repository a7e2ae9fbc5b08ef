"""SUPPORTED_OPS.md is generated from the registry: fail when the committed file is stale."""

from pathlib import Path

from executorch_neutron.ops import registry
from executorch_neutron.ops.docs import render_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_supported_ops_md_is_current():
    committed = (ROOT / "SUPPORTED_OPS.md").read_text()
    assert committed == render_markdown(), (
        "SUPPORTED_OPS.md is stale: run `python -m executorch_neutron.ops.docs > SUPPORTED_OPS.md`")


def test_every_constraint_and_option_is_documented():
    text = render_markdown()
    for entry in registry.entries():
        for t in entry.targets:
            assert registry.op_name(t) in text
    for name in registry.DELEGATION_OPTIONS:
        assert f"`{name}`" in text

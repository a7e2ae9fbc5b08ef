"""SUPPORTED_OPS.md is generated from the registry: fail when the committed file is stale."""

from pathlib import Path

import pytest

from executorch_neutron.report.supported_ops import render_markdown

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[2]


def test_supported_ops_md_is_current():
    committed = (ROOT / "SUPPORTED_OPS.md").read_text()
    assert committed == render_markdown(), (
        "SUPPORTED_OPS.md is stale: run `make supported-ops` (executorch-neutron ops --markdown > SUPPORTED_OPS.md)")


def test_limits_are_filled_per_target():
    """The same constraint reads 8 on imxrt700 and 16 on imx95 (the checks use the target's num_macs)."""
    assert "channels % 8 == 0" in render_markdown("imxrt700")
    assert "channels % 16 == 0" in render_markdown("imx95")
    assert "{num_macs}" not in render_markdown() and "{num_macs}" not in render_markdown("imx95")

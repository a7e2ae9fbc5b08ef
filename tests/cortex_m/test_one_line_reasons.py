"""A rejection reason is one line: errors framed by torch.fx ("While executing %node ...", "Original traceback:",
source lines) keep their first meaningful line in the report; the whole text goes to the debug log (--verbose)."""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.core.messages import first_line


def _fx_error() -> Exception:
    """The exception torch.fx's Interpreter raises when a node fails (torch's own framing of the message)."""

    class M(nn.Module):
        def forward(self, x):
            return torch.relu(x).view(3)

    try:
        torch.fx.Interpreter(torch.fx.symbolic_trace(M())).run(torch.randn(2))
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("the interpreter did not raise")


FX_FIRST_LINE = "shape '[3]' is invalid for input of size 2"


# name: (error, expected one line)
CASES = {
    "fx_framed": (_fx_error, FX_FIRST_LINE),
    "leading_blank_lines": (lambda: RuntimeError("\n\n  shapes differ  \nWhile executing %x"), "shapes differ"),
    "traceback_first": (lambda: RuntimeError('Traceback (most recent call last):\n  File "a.py", line 1\nValueError: bad'),
                        "ValueError: bad"),
    "empty": (lambda: KeyError(), "KeyError()"),
}


@pytest.mark.parametrize("name", CASES)
def test_first_line(name):
    make, expected = CASES[name]
    exc = make()
    got = first_line(exc)
    assert "\n" not in got
    if name == "empty":
        assert got in ("KeyError", "KeyError()")
    else:
        assert got == expected
    if name == "fx_framed":
        assert "While executing" in str(exc) and "Original traceback" in str(exc)  # torch's framing is there


def test_cortex_m_refusal_is_one_line_and_the_full_error_is_in_the_debug_log(monkeypatch, caplog):
    """ExecuTorch's Cortex-M passes fail on the linears with an fx-framed error: the report's reason is its first
    meaningful line."""
    from executorch_neutron.cortex_m import stage

    error = _fx_error()

    real_call = stage.CortexMLeftoversPass.call

    def failing_call(self, program):  # refuses the int8 linears, as the wheel's passes do with per-channel weights
        if any(stage._is_marked(n) and "linear" in str(n.target) for n in program.graph_module.graph.nodes):
            raise error
        return real_call(self, program)

    monkeypatch.setattr(stage.CortexMLeftoversPass, "call", failing_call)
    model = nn.Sequential(nn.Linear(16, 24), nn.Linear(24, 10)).eval()
    inputs = (torch.randn(2, 16),)
    with caplog.at_level(logging.DEBUG, logger="executorch_neutron"):
        result = lower(model, inputs, [inputs], target="imxrt700cm",
                       operators_not_to_delegate=("aten.linear.default",))
    report = result.report
    reasons = [report.float_reason(r) for r in report.float_rejections]
    assert reasons, str(report)
    for reason in reasons:
        assert "\n" not in reason and "While executing" not in reason, reason
        assert f"RuntimeError: {FX_FIRST_LINE}" in reason
    assert "While executing" not in str(report)
    assert any("While executing" in (r.exc_text or "") or "While executing" in r.getMessage()
               for r in caplog.records), "the full error is not in the debug log"

"""The order of passes/pipeline.py as checked data: PIPELINE meets every step's `after` / `before`; a list that
breaks any one constraint is refused with both steps and the reason; the reasons name exactly the steps their
constraints name; and a few constraints are shown to be real: with the two steps swapped, the graph keeps what the
earlier step was to rewrite (an op ExecuTorch leaves on the CPU, a pool stride Vela refuses, a squeeze that splits
a convolution from its activation)."""

import contextlib
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from executorch_neutron.passes import pipeline
from executorch_neutron.passes.pipeline import EVERY_OTHER_STEP, PIPELINE, PassContext, PassOrderError, Step, \
    check_order, run_passes
from executorch_neutron.target import ETHOS_U
from harness import Fn

NAMES = [s.name for s in PIPELINE]


def _declared(steps) -> list[tuple[str, str, Step]]:
    """(earlier, later, declaring step) read from the steps' fields here, not through pipeline.constraints."""
    out = []
    for step in steps:
        others = lambda names: [n for n in NAMES if n != step.name] if EVERY_OTHER_STEP in names else names  # noqa: E731
        out += [(step.name, other, step) for other in others(step.before)]
        out += [(other, step.name, step) for other in others(step.after)]
    return out


DECLARED = _declared(PIPELINE)
NAMED = [(a, b, s) for a, b, s in DECLARED if EVERY_OTHER_STEP not in (*s.after, *s.before)]


def _moved_before(later: str, earlier: str) -> list[Step]:
    """PIPELINE with `later` taken out and put back just before `earlier`."""
    steps = [s for s in PIPELINE if s.name != later]
    at = [s.name for s in steps].index(earlier)
    return steps[:at] + [PIPELINE[NAMES.index(later)]] + steps[at:]


def test_pipeline_meets_every_constraint():
    assert len(NAMED) >= 50 and len(DECLARED) == len(set((a, b) for a, b, _ in DECLARED))  # each declared once
    for earlier, later, step in DECLARED:
        assert NAMES.index(earlier) < NAMES.index(later), f"{earlier} must run before {later}: {step.order}"
    assert check_order(PIPELINE) == PIPELINE


@pytest.mark.parametrize("earlier, later", [(a, b) for a, b, _ in NAMED] + [("inline_autocast", NAMES[1])])
def test_a_list_that_breaks_a_constraint_is_refused_naming_both_steps(earlier, later):
    step = next(s for a, b, s in DECLARED if (a, b) == (earlier, later))
    with pytest.raises(PassOrderError) as err:
        check_order(_moved_before(later, earlier))
    line = f"{later} runs before {earlier}, but {earlier} must run before {later} ({step.name}: {step.order})"
    assert f"  {line}" in str(err.value).splitlines(), str(err.value)


def test_unknown_and_repeated_steps_are_refused():
    typo = Step(PIPELINE[2].run, "before a step that does not exist", before=("batch_norm_to_convv",))
    with pytest.raises(PassOrderError, match="add_alpha_to_mul names 'batch_norm_to_convv' in its order, which is no "
                                             "step of the list"):
        check_order([*PIPELINE[:2], typo, *PIPELINE[3:]])
    with pytest.raises(PassOrderError, match="remove_noops appears 2 times"):
        check_order([*PIPELINE, PIPELINE[NAMES.index("remove_noops")]])


def _mentioned(text: str) -> set[str]:
    return {n for n in NAMES if re.search(rf"(?<![\w.]){n}(?!\w)", text)}


@pytest.mark.parametrize("step", PIPELINE, ids=NAMES)
def test_reasons_name_exactly_the_constrained_steps(step):
    """Every step a reason names is ordered with it (declared by either of them); every step a constraint names
    is in the declaring step's reason; a reason saying "any" has no constraint with a named step."""
    related = {b if a == step.name else a for a, b, _ in DECLARED if step.name in (a, b)}
    assert _mentioned(step.order) - {step.name} <= related, step.order
    mine = {b if a == step.name else a for a, b, s in NAMED if s is step}
    assert mine <= _mentioned(step.order), f"{step.name}: constraints on {mine - _mentioned(step.order)} unexplained"
    if step.order.startswith("any"):  # (inline_autocast runs before it, as before every step)
        named = {b if a == step.name else a for a, b, _ in NAMED if step.name in (a, b)}
        assert not named, f"{step.name} says 'any' but is ordered with {named}"


@contextlib.contextmanager
def _pipeline(steps):
    """PIPELINE replaced by `steps` (as the quantizer reads it, through run_passes)."""
    original = pipeline.PIPELINE
    pipeline.PIPELINE = tuple(steps)
    try:
        yield
    finally:
        pipeline.PIPELINE = original


def _run(model, x, steps, ctx=PassContext()):
    gm = torch.export.export(model.eval(), x, strict=False).module()
    with _pipeline(steps):
        return run_passes(gm, ctx)


def _targets(gm) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def _both_orders(model, x, earlier, later, ctx=PassContext()):
    """(the graph PIPELINE writes, the graph with `later` run before `earlier`), each checked against the eager
    model (the rewrites compute the same values in float)."""
    graphs = _run(model, x, PIPELINE, ctx), _run(model, x, _moved_before(later, earlier), ctx)
    with torch.no_grad():
        want = model(*x)
        for gm in graphs:
            torch.testing.assert_close(gm(*x), want, rtol=1e-5, atol=1e-5)
    return graphs


def test_sdpa_to_matmul_before_matmul_to_bmm_is_real():
    """Swapped, the matmuls sdpa_to_matmul writes stay aten.matmul, which ExecuTorch decomposes after quantization
    into float ops on the CPU: the lowered program then has CPU nodes where it had none."""
    from executorch_neutron import lower

    torch.manual_seed(0)
    model, x = Fn(lambda s, q: F.scaled_dot_product_attention(q, q, q)), (torch.randn(1, 2, 8, 4),)
    kept, swapped = _both_orders(model, x, "sdpa_to_matmul", "matmul_to_bmm")
    assert "aten.matmul.default" not in _targets(kept) and _targets(kept).count("aten.bmm.default") == 2
    assert _targets(swapped).count("aten.matmul.default") == 2 and "aten.bmm.default" not in _targets(swapped)

    def cpu_nodes(steps) -> int:
        with _pipeline(steps):
            return len(lower(model, x, [x]).report.rejections)

    assert cpu_nodes(PIPELINE) == 0
    assert cpu_nodes(_moved_before("matmul_to_bmm", "sdpa_to_matmul")) > 0


def _max_pool_strides(gm) -> list[int]:
    return [max(n.args[2]) for n in gm.graph.nodes if n.target == torch.ops.aten.max_pool2d.default]


def test_max_pool_split_after_adaptive_max_pool_decompose_is_real():
    """On Ethos-U, a 20 x 20 -> 5 x 5 adaptive max pool is a stride-4 max pool, which max_pool_split writes as two
    of stride 2 (Vela's strides are 1..3); swapped, the stride-4 pool is written after the split has run."""
    torch.manual_seed(0)
    kept, swapped = _both_orders(nn.AdaptiveMaxPool2d(5), (torch.randn(1, 3, 20, 20),), "adaptive_max_pool_decompose",
                                 "max_pool_split", PassContext(backend=ETHOS_U))
    assert _max_pool_strides(kept) == [2, 2]
    assert _max_pool_strides(swapped) == [4]


def test_conv1d_to_conv2d_before_sink_squeeze_is_real():
    """The squeeze conv1d_to_conv2d writes after the convolution is moved below the relu by sink_squeeze, so the
    relu reads the convolution (the conv + relu pattern the quantizer fuses); swapped, it reads the squeeze."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(2, 4, 3), nn.ReLU())
    kept, swapped = _both_orders(model, (torch.randn(1, 2, 16),), "conv1d_to_conv2d", "sink_squeeze")

    def relu_input(gm) -> str:
        return next(str(n.args[0].target) for n in gm.graph.nodes if n.target == torch.ops.aten.relu.default)

    assert relu_input(kept) == "aten.conv2d.default"
    assert relu_input(swapped) == "aten.squeeze.dims"


def test_threshold_to_clamp_before_max_pool_padding_is_real():
    """A pool of a relu's output pads with 0 (constant_pad_nd); threshold(x, 0, 0) is a relu only once
    threshold_to_clamp has run, so swapped, max_pool_padding replicates the edges (slices and concatenations)."""
    torch.manual_seed(0)
    model = Fn(lambda s, x: F.max_pool2d(F.threshold(x, 0.0, 0.0), 3, 2, 1))
    kept, swapped = _both_orders(model, (torch.randn(1, 2, 8, 8),), "threshold_to_clamp", "max_pool_padding")
    assert "aten.constant_pad_nd.default" in _targets(kept) and "aten.cat.default" not in _targets(kept)
    assert "aten.constant_pad_nd.default" not in _targets(swapped) and "aten.cat.default" in _targets(swapped)

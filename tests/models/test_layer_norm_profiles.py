"""Layer norm is rewritten into int8 pieces only where the target's operator table runs them all: under the
`documented` profile (no rsqrt) it stays one float op on the CPU, as before the rewrite, instead of int8 pieces
split between NPU and CPU; `sdk-current` and Ethos-U targets (which have no profiles) run it on the NPU."""

import pytest
import torch
from models.transformer_blocks import BLOCKS

from executorch_neutron import lower
from executorch_neutron.quantizer import NeutronQuantizer

# name: (lower() options, partitions, CPU ops)
CASES = {
    "documented": ({"constraints": "documented"}, 0, ["aten.native_layer_norm.default"]),
    "sdk_current": ({"constraints": "sdk-current"}, 1, []),
    "ethos_u_documented": ({"target": "imx93", "constraints": "documented"}, 1, []),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_layer_norm_follows_the_profile(case):
    options, partitions, cpu = case
    model, inputs = BLOCKS["layer_norm"]()
    r = lower(model, inputs, [inputs, tuple(torch.randn_like(x) for x in inputs)], **options)
    assert len(r.report.partitions) == partitions, str(r.report)
    assert [j.op for j in r.report.rejections] == cpu, str(r.report)


def test_documented_layer_norm_computes_in_float():
    """Left whole, the CPU computes it in float: the .pte's output equals PyTorch's float layer norm."""
    from executorch_neutron.runtime import run

    model, inputs = BLOCKS["layer_norm"]()
    r = lower(model, inputs, [inputs], constraints="documented")
    torch.testing.assert_close(run(r.pte, list(inputs))[0], model(*inputs), rtol=1e-5, atol=1e-5)


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown constraints profile 'bogus'.*documented"):
        NeutronQuantizer(constraints="bogus")

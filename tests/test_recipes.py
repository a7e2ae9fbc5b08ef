"""Export recipes: `executorch.export.export(model, [inputs], export_recipe=...)` for imxrt700 / imxrt700cm.

The recipe and `lower()` are one pipeline: same options and calibration data give the same .pte bytes. QAT goes
through `QuantizationRecipe(is_qat=True, train_fn=...)`: a small model trained a few steps, its .pte run on the
host against PyTorch's quantized model from the same session.
"""

from __future__ import annotations

import pytest
import torch
from executorch.export import ExportRecipe, StageType, export
from executorch.export.recipe_registry import recipe_registry
from torch import nn

from executorch_neutron import lower
from executorch_neutron.recipes import NeutronRecipeType, get_imxrt700_recipe
from executorch_neutron.runtime import run
from harness import Fn

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # ExecuTorch flags the export API as experimental


def _head():
    return Fn(lambda s, x: torch.softmax(s.mods[1](torch.relu(s.mods[0](x)).mean((2, 3))), -1),
              nn.Conv2d(3, 16, 3), nn.Linear(16, 10)), torch.randn(1, 3, 9, 7)


def _gelu_residual():
    return Fn(lambda s, x: s.mods[1](F_gelu(s.mods[0](x))) + x, nn.Linear(24, 32), nn.Linear(32, 24)), \
        torch.randn(2, 24)


def F_gelu(x):
    return nn.functional.gelu(x)


CASES = {
    "imxrt700_head": ("imxrt700", _head, {}),
    "imxrt700cm_head": ("imxrt700cm", _head, {}),
    "imxrt700cm_gelu_residual_excluded_add": ("imxrt700cm", _gelu_residual,
                                              {"operators_not_to_delegate": ("aten.add.Tensor",)}),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_recipe_gives_the_bytes_of_lower(case):
    target, factory, options = case
    torch.manual_seed(0)
    model, x = factory()
    model.eval()
    calib = [(x,)] + [(torch.randn_like(x),) for _ in range(4)]
    expected = lower(model, (x,), calib, target=target, **options).pte
    recipe = get_imxrt700_recipe(target, calibration_inputs=calib, **options)
    assert export(model, [(x,)], export_recipe=recipe).get_pte_buffer() == expected


def test_provider_is_registered_with_executorch():
    assert "neutron" in recipe_registry.list_backends()
    assert set(recipe_registry.get_supported_recipes("neutron")) == set(NeutronRecipeType)
    recipe = ExportRecipe.get_recipe(NeutronRecipeType.PTQ_INT8, target="imxrt700cm")
    assert recipe.name == "neutron_ptq_int8_imxrt700cm"
    assert len(recipe.lowering_recipe.edge_manager_transform_passes) == 2  # the Cortex-M stage, the constant fold
    neutron_only = ExportRecipe.get_recipe(NeutronRecipeType.PTQ_INT8, target="imxrt700")
    assert len(neutron_only.lowering_recipe.edge_manager_transform_passes) == 1  # the constant fold


def test_bad_configurations_are_named():
    with pytest.raises(ValueError, match="imxrt700cm"):
        get_imxrt700_recipe("imxrt700-m55")
    with pytest.raises(ValueError, match="train_fn"):
        get_imxrt700_recipe("imxrt700cm", qat=True)


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return torch.softmax(self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3))), -1)


@pytest.mark.parametrize("target", ["imxrt700", "imxrt700cm"])
def test_qat_through_the_recipe(target):
    torch.manual_seed(0)
    x = torch.randn(4, 3, 8, 6)
    labels = torch.randint(0, 10, (4,))
    losses = []

    def train_fn(prepared):
        opt = torch.optim.SGD(prepared.parameters(), lr=0.05)
        for _ in range(5):
            opt.zero_grad()
            loss = nn.functional.nll_loss(torch.log(prepared(x) + 1e-6), labels)
            loss.backward()
            opt.step()
            losses.append(loss.item())

    session = export(SmallNet(), [(x,)], export_recipe=get_imxrt700_recipe(target, qat=True, train_fn=train_fn))
    assert len(losses) == 5 and losses[-1] < losses[0]  # it trained
    quantized = session.get_stage_artifacts()[StageType.QUANTIZE].data["forward"]
    got = run(session.get_pte_buffer(), [x])[0]
    with torch.no_grad():
        ref = quantized(x)
    assert torch.isfinite(got).all() and got.shape == (4, 10)
    assert ((got - ref).abs() * 256).round().max().item() <= 1  # softmax output step 1/256

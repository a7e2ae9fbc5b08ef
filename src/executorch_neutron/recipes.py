"""ExecuTorch export recipes for Neutron targets: `executorch.export.export(model, [inputs], export_recipe=...)`.

Importing this module registers `NeutronRecipeProvider` (backend name "neutron") with ExecuTorch's recipe
registry, so `ExportRecipe.get_recipe(NeutronRecipeType.PTQ_INT8, target="imxrt700cm")` works, and offers one
target recipe per SoC:

    from executorch.export import export
    from executorch_neutron.recipes import get_imxrt700_recipe

    recipe = get_imxrt700_recipe("imxrt700cm", calibration_inputs=calib)   # Neutron NPU + Cortex-M33
    pte = export(model, [inputs], export_recipe=recipe).get_pte_buffer()

`get_imx93_recipe(...)` is the i.MX 93 recipe (its Ethos-U65 through Vela); any Ethos-U target name works with
`ExportRecipe.get_recipe(..., target="ethos-u55-128")`. `imxrt700` is the NPU alone (leftovers are portable float kernels); `imxrt700cm` is the whole chip: one
quantization pass (`NeutronCortexMQuantizer`), Neutron partitions, then the leftovers as int8 `cortex_m::*`
kernels. QAT: `NeutronRecipeType.QAT_INT8` (or `qat=True`) with `train_fn(prepared_model)`.

A recipe is `lower()`'s pipeline expressed as ExecuTorch stages, taken from the same assembly (`pipeline.py`:
`resolve_spec`, then `assemble` gives the quantizer, the partitioner of the target's back end
(`backends.partitioner_for`), the edge compile config and the Cortex-M leftover step). Same options and
calibration data give the same .pte bytes as `lower()` (tests/test_recipes.py).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

import executorch.kernels.quantized  # noqa: F401  (out variants of quantize/dequantize, as lower() imports)
from executorch.export.recipe import (
    ExportRecipe,
    LoweringRecipe,
    QuantizationRecipe,
    RecipeType,
)
from executorch.export.recipe_provider import BackendRecipeProvider
from executorch.export.recipe_registry import recipe_registry

from .compile_spec import NeutronCompileSpec
from .pipeline import assemble, resolve_spec

BACKEND_NAME = "neutron"

#: The SoC target recipes: name -> the Neutron target that describes it.
SOC_TARGETS = {"imxrt700": "imxrt700", "imxrt700cm": "imxrt700cm"}


class NeutronRecipeType(RecipeType):
    """Recipes of the Neutron backend: int8 post-training quantization, or int8 quantization-aware training."""

    PTQ_INT8 = "neutron_ptq_int8"
    QAT_INT8 = "neutron_qat_int8"

    @classmethod
    def get_backend_name(cls) -> str:
        return BACKEND_NAME


def neutron_recipe(
    target: str | None = None,
    *,
    qat: bool = False,
    spec: NeutronCompileSpec | None = None,
    calibration_inputs: Iterable | None = None,
    calibration_inputs_fn: Callable[[], Iterable[tuple]] | None = None,
    train_fn: Callable | None = None,
    per_channel: bool = True,
    observer: str = "minmax",
    modules_to_skip: Sequence = (),
    precision=None,
    quantized_io: bool = False,
    **spec_options,
) -> ExportRecipe:
    """The ExportRecipe of `lower(model, inputs, calibration_inputs, target, **spec_options)`.

    calibration_inputs (a list of input tuples) or calibration_inputs_fn: PTQ calibration data; without either,
        ExecuTorch calibrates on the example inputs passed to `export`.
    train_fn: QAT only (required there): trains the prepared model in place (a few steps of your training loop).
    target / spec / spec_options: as for `lower()` (default target imxrt700; a target different from spec.target
        is an error); spec options are NeutronCompileSpec's fields (operators_not_to_delegate=..., reference=True).
    precision / quantized_io: as for `lower()` (per-layer precision in quantizer/precision.py's text form, "@FILE",
        a mapping or a PrecisionConfig; a .pte that takes and returns the quantized tensors).
    """

    spec = resolve_spec(target, spec, **spec_options)
    if qat and train_fn is None:
        raise ValueError("a QAT recipe needs train_fn(prepared_model): the training loop that runs before convert")
    if calibration_inputs is not None and calibration_inputs_fn is not None:
        raise ValueError("pass calibration_inputs or calibration_inputs_fn, not both")
    if calibration_inputs is not None:
        samples = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in calibration_inputs]
        calibration_inputs_fn = lambda: samples  # noqa: E731
    pipeline = assemble(spec, quantized_io=quantized_io, is_qat=qat, per_channel=per_channel, observer=observer,
                        modules_to_skip=modules_to_skip, precision=precision)
    return ExportRecipe(
        name=f"neutron_{'qat' if qat else 'ptq'}_int8_{spec.target}",
        quantization_recipe=QuantizationRecipe(
            quantizers=[pipeline.quantizer], is_qat=qat, train_fn=train_fn if qat else None,
            calibration_inputs_fn=None if qat else calibration_inputs_fn),
        lowering_recipe=LoweringRecipe(
            partitioners=[pipeline.partitioner], edge_compile_config=pipeline.edge_compile_config,
            edge_manager_transform_passes=pipeline.edge_transforms()),
        strict=False,  # as lower(): torch.export in non-strict mode
    )


class NeutronRecipeProvider(BackendRecipeProvider):
    """ExecuTorch recipe provider of the Neutron backend (registered on import of executorch_neutron.recipes)."""

    @property
    def backend_name(self) -> str:
        return BACKEND_NAME

    def get_supported_recipes(self) -> Sequence[RecipeType]:
        return list(NeutronRecipeType)

    def create_recipe(self, recipe_type: RecipeType, **kwargs: Any) -> Optional[ExportRecipe]:
        if recipe_type not in NeutronRecipeType:
            return None
        return neutron_recipe(qat=recipe_type == NeutronRecipeType.QAT_INT8, **kwargs)


def get_imxrt700_recipe(target_config: str = "imxrt700cm", qat: bool = False, **kwargs) -> ExportRecipe:
    """The target recipe of i.MX RT700: 'imxrt700' (Neutron NPU only) or 'imxrt700cm' (NPU + Cortex-M33 int8
    kernels for the leftovers). kwargs: as `neutron_recipe` (calibration_inputs, train_fn, spec options)."""
    if target_config not in SOC_TARGETS:
        raise ValueError(f"unsupported i.MX RT700 configuration {target_config!r}: supported {sorted(SOC_TARGETS)}")
    recipe_type = NeutronRecipeType.QAT_INT8 if qat else NeutronRecipeType.PTQ_INT8
    return ExportRecipe.get_recipe(recipe_type, target=SOC_TARGETS[target_config], **kwargs)


def get_imx93_recipe(qat: bool = False, **kwargs) -> ExportRecipe:
    """The target recipe of i.MX 93: its Ethos-U65-256 through Vela (EthosUBackend delegates; leftovers portable
    kernels). kwargs: as `neutron_recipe` (calibration_inputs, train_fn, spec options such as embed_reference)."""
    recipe_type = NeutronRecipeType.QAT_INT8 if qat else NeutronRecipeType.PTQ_INT8
    return ExportRecipe.get_recipe(recipe_type, target="imx93", **kwargs)


recipe_registry.register_backend_recipe_provider(NeutronRecipeProvider())

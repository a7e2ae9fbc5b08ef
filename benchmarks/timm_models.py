"""Real timm architectures (random weights) on the NPU: the models the issues measured, as timm defines them.

    PYTHONPATH=/path/to/timm-dir .venv/bin/python benchmarks/timm_models.py [--models vit_tiny mixnet_s ...] [--write-docs]

Not part of the test suite and not a dependency of the package: timm is installed by hand into a directory of your
own, e.g. `pip install --no-deps --target ../timm timm==1.0.31 pillow pyyaml huggingface_hub safetensors`.
timm imports torchvision at import time, and PyPI's torchvision does not load beside the CPU build of torch 2.13
("operator torchvision::nms does not exist"); when it cannot be imported this script puts a stand-in module in its
place. The measured models never call torchvision (it is used by timm's data transforms and FrozenBatchNorm2d).

Per model: partitions, CPU compute nodes (by operator), share of nodes and MACs on the NPU, max output steps of the
.pte (host runtime) vs PyTorch's quantized model, SQNR vs float (ours / quantized PyTorch), lowering seconds.
Random weights with batch norm statistics warmed up on random inputs. Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import sys
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

# name -> (timm model name, input resolution, timm keyword arguments)
MODELS = {
    "regnetx_002": ("regnetx_002", 224, {}),
    "mixnet_s": ("mixnet_s", 224, {}),
    "efficientnet_b0": ("efficientnet_b0", 224, {}),
    "vit_tiny_64": ("vit_tiny_patch16_224", 64, {"img_size": 64}),
    "mobilevit_xxs_64": ("mobilevit_xxs", 64, {}),
    "mobilevit_xxs_256": ("mobilevit_xxs", 256, {}),
    "efficientvit_b0_64": ("efficientvit_b0", 64, {}),
    "efficientvit_m0_64": ("efficientvit_m0", 64, {"img_size": 64}),
}


class _StandIn(type):
    def __getattr__(cls, name):
        return _StandIn(name, (object,), {})


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _StandIn(name, (object,), {})


class _TorchvisionStandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers `import torchvision[.x]` with modules whose every attribute is an empty class."""

    def find_spec(self, name, path, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StandInModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def _import_timm():
    try:
        import torchvision  # noqa: F401
    except Exception:
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        sys.meta_path.insert(0, _TorchvisionStandIn())
    try:
        import timm
    except ImportError as exc:
        sys.exit(f"timm is not importable ({exc}); install it into a directory and put that on PYTHONPATH, "
                 "see this script's docstring")
    return timm


def _factory(timm, name: str, resolution: int, kwargs: dict):
    def build():
        torch.manual_seed(0)
        model = timm.create_model(name, pretrained=False, **kwargs)
        model.train()
        with torch.no_grad():  # warm batch norm statistics so activations have realistic ranges
            for _ in range(4):
                model(torch.randn(4, 3, resolution, resolution))
        model.eval()
        return model, (torch.randn(1, 3, resolution, resolution),)
    return build


def main() -> None:
    import _docs
    from model_zoo import print_table

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--samples", type=int, default=2, help="inputs compared per model")
    p.add_argument("--constraints", default="sdk-current", help="constraint profile")
    p.add_argument("--target", default="imxrt700", help="target (e.g. imx93 for the Ethos-U65)")
    _docs.add_argument(p)
    args = p.parse_args()
    timm = _import_timm()
    with _docs.figures(args, "benchmarks/timm_models.py", "timm_models", "Real timm architectures"):
        print(f"timm {timm.__version__}, torch {torch.__version__}, target {args.target}")
        factories = {key: _factory(timm, *MODELS[key]) for key in args.models}
        print_table(factories, args.models, args.samples, "model", target=args.target, constraints=args.constraints)


if __name__ == "__main__":
    main()

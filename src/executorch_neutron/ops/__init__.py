"""One module per operator family; importing them fills the registry (`ops.registry`)."""

import importlib

FAMILIES = (
    "conv",
    "linear",
    "activations",
    "elementwise",
    "pooling",
    "reduce",
    "resize",
    "shape",
    "softmax",
    "unary_math",
    "no_kernel",
)


def load_all() -> None:
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")

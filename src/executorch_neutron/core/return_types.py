"""PyTorch's structseq return types (`torch.return_types.median`, `.max`, `.topk`, ...) get a serialized pytree
name, so that ExecuTorch's emitter can write the output spec of a program whose forward() returns one.

PyTorch registers them as pytree nodes without a name, and `to_executorch` then fails on such a model ("No
registered serialization name for <class 'torch.return_types.median'> found"), whatever the back end. The name
given is the class's own (`torch.return_types.median`); a type that already has a name keeps it.
"""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree


def install() -> None:
    """Name every unnamed `torch.return_types` class in PyTorch's pytree serialization tables (idempotent)."""
    for cls in torch.return_types.all_return_types:
        node = pytree.SUPPORTED_SERIALIZED_TYPES.get(cls)
        if node is None or node.serialized_type_name != pytree.NO_SERIALIZED_TYPE_NAME_FOUND:
            continue
        name = f"torch.return_types.{cls.__name__}"
        pytree.SUPPORTED_SERIALIZED_TYPES[cls] = node._replace(serialized_type_name=name)
        pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE[name] = cls

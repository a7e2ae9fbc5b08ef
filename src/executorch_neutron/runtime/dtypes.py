"""ExecuTorch ScalarType codes (as a .pte and the runtime carry them) -> torch and numpy dtypes.

The codes and their torch dtypes are ExecuTorch's own (`executorch.exir.scalar_type.ScalarType`,
`executorch.exir.tensor.enum_to_scalar_map`); this module only says which of them the host runtime handles.
"""

from __future__ import annotations

import torch
from executorch.exir.scalar_type import ScalarType
from executorch.exir.tensor import enum_to_scalar_map

# dtypes a host-reference payload's arguments may have (LiteRT's reference kernels read them as numpy arrays)
_HOST_ARGS = (ScalarType.BYTE, ScalarType.CHAR, ScalarType.SHORT, ScalarType.INT, ScalarType.LONG, ScalarType.HALF,
              ScalarType.FLOAT, ScalarType.DOUBLE, ScalarType.BOOL)
# integer dtypes of quantized_decomposed::{quantize,dequantize}_per_tensor's kernels, and their float side
_QUANTIZED = (ScalarType.BYTE, ScalarType.CHAR, ScalarType.SHORT, ScalarType.INT, ScalarType.UINT16)
FLOAT_CODES = frozenset(int(c) for c in (ScalarType.HALF, ScalarType.FLOAT, ScalarType.DOUBLE, ScalarType.BFLOAT16))


def torch_dtype(code: int) -> torch.dtype | None:
    """The torch dtype of an ExecuTorch ScalarType code; None for a code ExecuTorch does not define."""
    try:
        return enum_to_scalar_map.get(ScalarType(code))
    except ValueError:
        return None


NUMPY_DTYPES = {int(c): torch.empty(0, dtype=enum_to_scalar_map[c]).numpy().dtype for c in _HOST_ARGS}
QUANT_RANGES = {int(c): (torch.iinfo(enum_to_scalar_map[c]).min, torch.iinfo(enum_to_scalar_map[c]).max)
                for c in _QUANTIZED}

"""Tensors to and from the board: a user's tensor (as the host run takes it) -> the raw bytes LOAD_INPUT carries
(the program's dtype, shape and dim order, as GET_INFO reports them), and RESULT bytes -> the tensor the host run
returns (the program's dtype, logical shape; a channels-last output keeps its channels-last memory, as on the host).

A float program input is sent as float32. A quantized program input (a .pte compiled with --quantized-io) reaches
`to_board` already quantized: `session.py` quantizes a float tensor given for it with the qparams the .pte holds (the
host run's reader and functions), and dequantizes the outputs then. Any other integer input is sent as given when
its values are integers in the dtype's range.
"""

from __future__ import annotations

import torch

from ..runtime.dtypes import torch_dtype
from .protocol import TensorSpec


class TensorMismatch(ValueError):
    """A user's tensor that cannot be sent as the program's input."""


def _dtype(spec: TensorSpec, what: str) -> torch.dtype:
    dtype = torch_dtype(spec.dtype)
    if dtype is None:
        raise TensorMismatch(f"{what} has ExecuTorch dtype code {spec.dtype}, which ExecuTorch does not define: the "
                             "firmware's GET_INFO answer is damaged; reset the board and try again")
    return dtype


def check_tensors(inputs) -> None:
    """Refuse a non-tensor input, as the host run does (before anything is sent)."""
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TensorMismatch(f"input {i} must be a tensor, got {type(x).__name__}"
                                 + (": pass torch.from_numpy(x)" if type(x).__module__ == "numpy" else ""))


def to_board(x: torch.Tensor, spec: TensorSpec, index: int) -> bytes:
    """The LOAD_INPUT bytes of input `index` given as `x` (logical shape, any dtype)."""
    dtype = _dtype(spec, f"input {index}")
    if tuple(x.shape) != tuple(spec.sizes):
        raise TensorMismatch(f"input {index} is {list(x.shape)} but the program on the board takes "
                             f"{dtype}{list(spec.sizes)}; pass inputs of the exported shape")
    if not dtype.is_floating_point and dtype != torch.bool:
        info = torch.iinfo(dtype)
        if torch.is_floating_point(x) and not bool((x == x.round()).all()) or \
                x.numel() and (float(x.min()) < info.min or float(x.max()) > info.max):
            raise TensorMismatch(
                f"input {index} of the program takes {dtype} values in [{info.min}, {info.max}] and the values given "
                f"are not; the .pte holds no quantization parameters for input {index} (a float tensor is quantized "
                f"only for a .pte compiled with --quantized-io): pass {dtype} values")
    order = spec.dim_order or tuple(range(x.dim()))
    data = x.to(dtype).permute(*order).contiguous().numpy().tobytes()
    if len(data) != spec.nbytes:
        raise TensorMismatch(f"input {index} is {len(data)} bytes in the program's dtype but the board expects "
                             f"{spec.nbytes}: the firmware's GET_INFO answer disagrees with itself")
    return data


def from_board(result: TensorSpec, data: bytes, info: TensorSpec | None, index: int) -> torch.Tensor:
    """Output `index` from its RESULT entry and bytes; `info` (its GET_INFO entry) gives the dim order the bytes are
    laid out in (RESULT carries none)."""
    dtype = _dtype(result, f"output {index}")
    order = tuple(info.dim_order) if info is not None and info.dim_order else tuple(range(len(result.sizes)))
    physical = [result.sizes[d] for d in order]
    if len(data) != torch.Size(physical).numel() * dtype.itemsize:
        raise TensorMismatch(f"output {index}: the board sent {len(data)} bytes for {dtype}{list(result.sizes)}; "
                             "the RESULT frame is inconsistent: reset the board and try again")
    flat = torch.frombuffer(bytearray(data), dtype=dtype) if data else torch.empty(0, dtype=dtype)
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return flat.reshape(physical).permute(*inverse)

"""Tensors to and from the board: a user's tensor (as the host run takes it) -> the raw bytes LOAD_INPUT carries
(the program's dtype, shape and dim order, as GET_INFO reports them), and RESULT bytes -> the tensor the host run
returns (the program's dtype, logical shape; a channels-last output keeps its channels-last memory, as on the host).

The .pte files this package writes take and return float tensors (quantize/dequantize are kernels inside the
program), so a float input is sent as float32. An integer program input (a program exported with quantized I/O)
is sent as given when its values are integers in the dtype's range: such a .pte holds no quantization parameters
for its inputs, so the values must already be quantized; none are invented here.
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
                f"input {index} of the program is {dtype} (quantized I/O) but the values given are not {dtype} "
                "values; the .pte holds no quantization parameters for its inputs: pass the already quantized "
                f"tensor ({dtype} values in [{info.min}, {info.max}])")
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

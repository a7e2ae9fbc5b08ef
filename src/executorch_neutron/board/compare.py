"""Board outputs against the host run's, per output: bytes equal or not, and the largest difference in output
quantization steps: for a quantized output (quantized I/O) its own integer steps (or, dequantized, steps of its
scale), for a float output the scale of the .pte's dequantize that writes it (qparams.py); an absolute difference
only where the .pte holds neither for the output."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from .qparams import output_qparams, quantized_io


def compare_with_host(pte: str | Path | bytes, board: Sequence[torch.Tensor],
                      host: Sequence[torch.Tensor]) -> list[str]:
    data = bytes(pte) if isinstance(pte, (bytes, bytearray, memoryview)) else Path(pte).read_bytes()
    quantized = {q.index: q for q in quantized_io(data) if q.side == "output"}
    dequantized = output_qparams(data)
    lines = []
    for i, (b, h) in enumerate(zip(board, host)):
        if b.shape != h.shape or b.dtype != h.dtype:
            lines.append(f"output {i}: board {b.dtype}{list(b.shape)} vs host {h.dtype}{list(h.shape)}: not comparable")
            continue
        same = b.contiguous().numpy().tobytes() == h.contiguous().numpy().tobytes()
        diff = float((b.double() - h.double()).abs().max()) if b.numel() else 0.0
        q = quantized.get(i)
        if q is not None and not b.is_floating_point():
            size = f"{diff:.3g} output step(s) ({q.dtype} output of the program, scale {q.scale:.6g})"
        elif q is not None or (i < len(dequantized) and dequantized[i]):
            scale = q.scale if q is not None else dequantized[i][0]
            size = f"{diff / scale:.3g} output step(s) (scale {scale:.6g})"
        else:
            size = f"{diff:.6g} (absolute: output {i} is float and the .pte dequantizes it with no single scale)"
        lines.append(f"output {i}: largest board-host difference {size}; bytes {'equal' if same else 'differ'}")
    if len(board) != len(host):
        lines.append(f"the board returned {len(board)} output(s), the host {len(host)}")
    return lines

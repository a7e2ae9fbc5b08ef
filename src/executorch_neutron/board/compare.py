"""Board outputs against the host run's, per output: bytes equal or not, and the largest difference in output
quantization steps (the scale the .pte's dequantize of that output uses, qparams.py), or as an absolute difference
where the .pte holds no scale for the output."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from .qparams import output_qparams


def compare_with_host(pte: str | Path | bytes, board: Sequence[torch.Tensor],
                      host: Sequence[torch.Tensor]) -> list[str]:
    data = bytes(pte) if isinstance(pte, (bytes, bytearray, memoryview)) else Path(pte).read_bytes()
    qparams = output_qparams(data)
    lines = []
    for i, (b, h) in enumerate(zip(board, host)):
        if b.shape != h.shape or b.dtype != h.dtype:
            lines.append(f"output {i}: board {b.dtype}{list(b.shape)} vs host {h.dtype}{list(h.shape)}: not comparable")
            continue
        same = b.contiguous().numpy().tobytes() == h.contiguous().numpy().tobytes()
        diff = float((b.double() - h.double()).abs().max()) if b.numel() else 0.0
        scale = qparams[i][0] if i < len(qparams) and qparams[i] else None
        size = (f"{diff / scale:.3g} output step(s) (scale {scale:.6g})" if scale
                else f"{diff:.6g} (absolute: the .pte holds no output scale)")
        lines.append(f"output {i}: largest board-host difference {size}; bytes {'equal' if same else 'differ'}")
    if len(board) != len(host):
        lines.append(f"the board returned {len(board)} output(s), the host {len(host)}")
    return lines

"""Transformer benchmark: how much of each transformer block and small transformer model runs on the NPU.

    .venv/bin/python benchmarks/transformers.py [--cases layer_norm kwt ...] [--constraints sdk-current] [--write-docs]

The blocks and models are those of tests/models/transformer_blocks.py (layer norm, GELU, MLP, attention written
with matmuls / nn.MultiheadAttention / F.scaled_dot_product_attention, a pre-norm encoder layer; KWT, a tiny ViT,
a MobileViT block). Per case: partitions, CPU compute nodes (by operator), max output steps of the .pte (host
runtime) vs PyTorch's quantized model, SQNR vs float of the .pte and of PyTorch's quantized model, lowering
seconds. Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    import _docs
    from model_zoo import print_table
    from models.transformer_blocks import BLOCKS, MODELS

    cases = {**BLOCKS, **MODELS}
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="*", default=list(cases), choices=list(cases))
    p.add_argument("--samples", type=int, default=4, help="inputs compared per case")
    p.add_argument("--constraints", default="sdk-current", help="constraint profile")
    _docs.add_argument(p)
    args = p.parse_args()
    with _docs.figures(args, "benchmarks/transformers.py", "transformers", "Transformers on the NPU"):
        print_table(cases, args.cases, args.samples, "case", constraints=args.constraints)

if __name__ == "__main__":
    main()

"""The selective-build operator list of a .pte: the `selected_operators.yaml` ExecuTorch's selective build reads
(`executorch.codegen.tools.gen_oplist`: the operators and their kernel keys, dtypes and dim orders), so that a
firmware links exactly the CPU kernels the model calls. Written by ExecuTorch's own generator, from the .pte file.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from ..core.atomic import replacing


def selected_operators_path(pte_path: str | Path) -> Path:
    """Where `compile` writes the list: beside the .pte, `model.pte` -> `model.ops.yaml`."""
    return Path(pte_path).with_suffix(".ops.yaml")


def write_selected_operators(pte_path: str | Path, out: str | Path) -> Path:
    from executorch.codegen.tools.gen_oplist import gen_oplist

    with replacing(out) as tmp, contextlib.redirect_stdout(io.StringIO()):  # the generator prints what it reads
        gen_oplist(output_path=str(tmp), model_file_path=str(pte_path))
    return Path(out)

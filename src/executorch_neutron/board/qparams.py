"""The quantization parameters a .pte holds for its inputs and outputs, for the board run and its comparison:
`quantized_io` (a quantized-I/O .pte: its inputs' and outputs' qparams, read by `pte.io_qparams`, the reader the
host run uses) and `output_qparams` (a float-I/O .pte: the scale and zero point of the
`quantized_decomposed::dequantize_per_tensor.out` kernel call that writes each method output, None for an output no
such call writes). `run --device --compare-host` counts board-vs-host differences in these steps.
"""

from __future__ import annotations

_DEQUANTIZE = "quantized_decomposed::dequantize_per_tensor"


def quantized_io(pte: bytes, method: int = 0) -> list:
    """The `pte.IOQParams` of method `method`'s quantized inputs and outputs (empty: its I/O is float)."""
    from ..pte import io_qparams, read_pte

    pte_file = read_pte(bytes(pte))
    return io_qparams(pte_file.constants()).get(pte_file.program.execution_plan[method].name, [])


def output_qparams(pte: bytes, method: int = 0) -> list[tuple[float, int] | None]:
    from ..pte import read_pte

    plan = read_pte(bytes(pte)).program.execution_plan[method]
    writer = {}  # value index -> (scale, zero point) of the dequantize call whose out argument it is
    for chain in plan.chains:
        for instruction in chain.instructions:
            call = instruction.instr_args
            if type(call).__name__ != "KernelCall" or plan.operators[call.op_index].name != _DEQUANTIZE:
                continue
            scale, zero_point = (plan.values[i].val for i in call.args[1:3])
            if type(scale).__name__ == "Double" and type(zero_point).__name__ == "Int":
                writer[call.args[-1]] = (scale.double_val, zero_point.int_val)
    return [writer.get(i) for i in plan.outputs]

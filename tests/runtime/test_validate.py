"""runtime/validate.py: a .pte is checked before ExecuTorch's runtime sees it. A program ExecuTorch's own
serializer wrote passes; each damaged field of a quantize call is refused with a message that names it."""

import copy
import math

import pytest
import torch
from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
from torch import nn

from executorch_neutron import lower
from executorch_neutron.runtime.validate import InvalidProgram, check_program


@pytest.fixture(scope="module")
def pte() -> bytes:
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 8, 6),)
    return lower(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).eval(), inputs, [inputs]).pte


def _quantize_call(program):
    """(plan, argument value indices) of the program's quantize_per_tensor kernel call (the int8 input)."""
    for plan in program.execution_plan:
        for chain in plan.chains:
            for instr in chain.instructions:
                call = instr.instr_args
                if type(call).__name__ == "KernelCall" and \
                        plan.operators[call.op_index].name == "quantized_decomposed::quantize_per_tensor":
                    return plan, call.args
    raise AssertionError("no quantize_per_tensor call in the program")


def _damaged(pte: bytes, position: int, field: str, value) -> bytes:
    pte_file = deserialize_pte_binary(pte)
    plan, args = _quantize_call(pte_file.program)
    val = copy.copy(plan.values[args[position]].val)
    setattr(val, field, value)
    plan.values[args[position]].val = val
    return bytes(serialize_pte_binary(pte_file))


# name: (argument position in quantize_per_tensor(input, scale, zero_point, quant_min, quant_max, dtype, out),
#        field of its EValue, damaged value, what the message names)
DAMAGE = {
    "scale_nan": (1, "double_val", math.nan, "scale nan"),
    "scale_negative": (1, "double_val", -0.5, "scale -0.5"),
    "zero_point_outside": (2, "int_val", 300, "zero point 300"),
    "quant_max_beyond_int8": (4, "int_val", 1000, "quant_max 1000"),
    "quant_min_below_int8": (3, "int_val", -200, "quant_min -200"),
    "dtype_unknown": (5, "int_val", 99, "dtype code 99"),
    "dtype_not_the_tensors": (5, "int_val", 2, "where its dtype is 2"),  # int16: the range fits, the tensor not
}


def test_a_program_executorch_wrote_passes(pte):
    check_program(pte)


@pytest.mark.parametrize("case", DAMAGE.values(), ids=DAMAGE.keys())
def test_damaged_quantize_argument_is_named(pte, case):
    position, field, value, needle = case
    with pytest.raises(InvalidProgram, match="quantize_per_tensor") as err:
        check_program(_damaged(pte, position, field, value))
    assert needle in str(err.value)


@pytest.mark.fast
def test_not_a_program():
    with pytest.raises(InvalidProgram, match="the data is not an ExecuTorch program: its file identifier is"):
        check_program(b"\x00" * 64)


class _Split(nn.Module):
    def forward(self, x):
        a, b = torch.split(x, [2, 3], dim=1)
        return a * 2, b + 1


def _executorch_program(model, inputs) -> bytes:
    """A float program as ExecuTorch's own emitter writes it (no backend): the reference for 'valid'."""
    from executorch.exir import to_edge

    return to_edge(torch.export.export(model, inputs)).to_executorch().buffer


def test_out_variant_returning_nothing_passes():
    # `split_with_sizes_copy.out(..., *, Tensor(a!)[] out) -> ()`: the emitter passes the out list twice
    pte = check_program(_executorch_program(_Split(), (torch.randn(2, 5),)))
    names = {op.name for plan in pte.program.execution_plan for op in plan.operators}
    assert "aten::split_with_sizes_copy" in names


def test_out_variant_with_a_value_too_many_is_refused():
    pte_file = deserialize_pte_binary(_executorch_program(_Split(), (torch.randn(2, 5),)))
    for plan in pte_file.program.execution_plan:
        for chain in plan.chains:
            for instr in chain.instructions:
                call = instr.instr_args
                if type(call).__name__ == "KernelCall" and "split" in plan.operators[call.op_index].name:
                    call.args = [*call.args, call.args[-1]]
    with pytest.raises(InvalidProgram, match="split_with_sizes_copy.out passes 6 values; its schema takes 4"):
        check_program(bytes(serialize_pte_binary(pte_file)))

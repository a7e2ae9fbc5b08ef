"""Check a .pte before ExecuTorch's C++ runtime sees it: refuse, with a message, what would abort the process.

ExecuTorch's runtime verifies the flatbuffer, but some damage only shows inside a kernel, whose argument checks
abort the whole process (`ET_CHECK`: SIGABRT), and an operator name that is not UTF-8 throws through its
operator registry (also an abort). This module reads the program (pte.read_pte, ExecuTorch's own Python
deserializer) and checks, per CPU kernel call:
  - the operator's name decodes (the deserializer refuses non-UTF-8 strings);
  - the arguments match the operator's schema (a tensor where a tensor is expected, an int where an int is, ...)
    when PyTorch knows the operator;
  - quantize/dequantize arguments are in range for their dtype: quant_min <= quant_max inside the dtype's range,
    a finite positive scale, the zero point inside [quant_min, quant_max], the tensor dtypes the kernel needs;
  - per-channel quantize/dequantize get scales of the dtypes their kernels assert on (quantize_per_channel:
    double; dequantize_per_channel: double or float).
Before those, what ExecuTorch would only answer with an error code: the file identifier (magic), delegates for a
backend that is not registered, operators without a registered kernel. Quantize/dequantize calls must read and
write tensors of one size (a program edited to other input sizes aborts in them).
It costs a parse of the program (tens of milliseconds for a small .pte).
"""

from __future__ import annotations

import math

from executorch.exir.scalar_type import ScalarType

from ..pte import PteError, PteFile, read_pte
from .dtypes import FLOAT_CODES, QUANT_RANGES
from .errors import NeutronRuntimeError

_QUANT_OPS = ("quantized_decomposed::quantize_per_tensor", "quantized_decomposed::dequantize_per_tensor")
# per-channel kernels -> the scale dtypes each accepts (ExecuTorch 1.5.1's op_quantize.cpp / op_dequantize.cpp
# assert on them: an abort)
_PER_CHANNEL_SCALES = {"quantized_decomposed::quantize_per_channel": (ScalarType.DOUBLE,),
                       "quantized_decomposed::dequantize_per_channel": (ScalarType.DOUBLE, ScalarType.FLOAT)}
_SCALAR_KIND = {"IntType": "Int", "FloatType": "Double", "BoolType": "Bool", "ScalarTypeType": "Int",
                "TensorType": "Tensor", "StringType": "String"}


class InvalidProgram(NeutronRuntimeError):
    """The .pte is damaged or not a .pte; the message names what is wrong."""


class MissingKernel(NeutronRuntimeError):
    """The .pte is sound, but it calls a CPU operator the runtime has no kernel for."""


def _fail(message: str) -> InvalidProgram:
    return InvalidProgram(f"invalid .pte: {message}; the file is damaged: re-export it (lower(...).save or "
                          f"`executorch-neutron compile`)")


def check_program(pte, backends=None, kernels=None) -> PteFile:
    """Raise InvalidProgram when the program `pte` (a path or bytes, read by pte.read_pte) is not safe to hand to
    ExecuTorch's runtime; returns it read. `backends` / `kernels`: the registered backend ids and kernel names
    ('ns::op.overload') of the runtime that will load it (None: not checked)."""
    try:
        pte_file = read_pte(pte)
    except PteError as exc:  # not a .pte, or one ExecuTorch's deserializer refuses
        raise InvalidProgram(str(exc)) from None
    try:
        _check_plans(pte_file.program)
        _check_registered(pte_file.program, backends, kernels)
    except (TypeError, AttributeError, IndexError, KeyError, ValueError) as exc:  # a table field missing or bent
        raise _fail(f"its tables are inconsistent ({type(exc).__name__}: {exc})") from None
    return pte_file


def _check_registered(program, backends, kernels) -> None:
    for plan in program.execution_plan:
        if backends is not None:
            for k, delegate in enumerate(plan.delegates):
                if delegate.id not in backends:
                    raise InvalidProgram(
                        f"invalid .pte: delegate {k} of method {plan.name!r} is for backend {delegate.id!r}, which is "
                        f"not registered in this runtime (registered: {', '.join(sorted(backends))}); run it where "
                        f"that backend is registered, or re-export the .pte if the name was damaged")
        for op in unregistered_operators(plan, kernels) if kernels is not None else ():
            name = op_name(op)
            if _schema(op) is None:  # no operator PyTorch knows: the name itself was damaged
                raise InvalidProgram(
                    f"invalid .pte: operator {name!r} of method {plan.name!r} has no registered kernel in this "
                    f"runtime, and PyTorch knows no such operator; re-export the .pte")
            raise MissingKernel(
                f"operator {name!r} of method {plan.name!r} has no kernel in this runtime (ExecuTorch's portable "
                f"kernels): the model leaves it on the CPU, and the host runtime cannot run it")


def op_name(op) -> str:
    """An operator of an execution plan as kernels are registered: 'ns::op.overload'."""
    return f"{op.name}.{op.overload}" if op.overload else op.name


def unregistered_operators(plan, kernels) -> list:
    """The operators of an execution plan that `kernels` (the runtime's registered kernel names) lacks; cortex_m::*
    are left out: host.py names those itself."""
    return [op for op in plan.operators if op_name(op) not in kernels and not op.name.startswith("cortex_m::")]


def _check_plans(program) -> None:
    for plan in program.execution_plan:
        _check_indices(plan)
        for op in plan.operators:
            if not isinstance(op.name, str) or not op.name:
                raise _fail(f"method {plan.name!r} has an operator without a name")
        for chain in plan.chains:
            for instr in chain.instructions:
                call = instr.instr_args
                if type(call).__name__ != "KernelCall":
                    continue
                if not 0 <= call.op_index < len(plan.operators):
                    raise _fail(f"method {plan.name!r} calls operator {call.op_index}; it has {len(plan.operators)}")
                op = plan.operators[call.op_index]
                name = f"{op.name}.{op.overload}" if op.overload else op.name
                if any(not 0 <= a < len(plan.values) for a in call.args):
                    raise _fail(f"a call of {name} in method {plan.name!r} reads a value outside its "
                                f"{len(plan.values)} values")
                values = [plan.values[a].val for a in call.args]
                _check_schema(op, name, values)
                if op.name in _QUANT_OPS:
                    _check_quant_args(op.name, name, values)
                elif op.name in _PER_CHANNEL_SCALES:
                    _check_per_channel_args(op.name, name, values)


# instruction kind -> its fields that index the method's values
_VALUE_FIELDS = {"KernelCall": ("args",), "DelegateCall": ("args",), "MoveCall": ("move_from", "move_to"),
                 "JumpFalseCall": ("cond_value_index",), "FreeCall": ("value_index",)}


def _check_indices(plan) -> None:
    """Every value index of the method (inputs, outputs, chain inputs/outputs, instruction operands) is in range:
    ExecuTorch asserts on them at run time (`get_value(): i < n_value_`, an abort)."""
    n = len(plan.values)
    lists = [("inputs", plan.inputs), ("outputs", plan.outputs)]
    for k, chain in enumerate(plan.chains):
        lists += [(f"chain {k} inputs", chain.inputs), (f"chain {k} outputs", chain.outputs)]
        for instr in chain.instructions:
            call = instr.instr_args
            kind = type(call).__name__
            if kind == "DelegateCall" and not 0 <= call.delegate_index < len(plan.delegates):
                raise _fail(f"method {plan.name!r} calls delegate {call.delegate_index}; it has {len(plan.delegates)}")
            if kind == "JumpFalseCall" and not 0 <= call.destination_instruction <= len(chain.instructions):
                raise _fail(f"method {plan.name!r} jumps to instruction {call.destination_instruction} of "
                            f"{len(chain.instructions)}")
            for name in _VALUE_FIELDS.get(kind, ()):
                value = getattr(call, name, None)
                lists.append((f"a {type(call).__name__} {name}", value if isinstance(value, list) else [value]))
    for what, indices in lists:
        bad = [i for i in indices or [] if not isinstance(i, int) or not 0 <= i < n]
        if bad:
            raise _fail(f"method {plan.name!r}: {what} refer to value {bad[0]}, outside its {n} values")


def _kind(value) -> str:
    return type(value).__name__


def _schema(op):
    import torch

    ns, _, base = op.name.partition("::")
    try:
        packet = getattr(getattr(torch.ops, ns), base)
        return getattr(packet, op.overload or "default")._schema
    except (AttributeError, RuntimeError):
        return None


def _check_schema(op, name: str, values: list) -> None:
    """Argument kinds against the operator's schema (arguments, then returns), where PyTorch knows it."""
    schema = _schema(op)
    if schema is None:
        return
    # the emitter passes every argument, then the result: one value for one return, and for several returns
    # (max_pool2d_with_indices.out, native_layer_norm.out) one list value holding them; an out variant that
    # returns nothing (split_with_sizes_copy.out, unbind_copy.int_out: `-> ()`) gets its out argument once more
    n_args, n_returns = len(schema.arguments), len(schema.returns)
    allowed = {n_args + min(n_returns, 1), n_args + n_returns}
    if n_returns == 0 and any(a.is_out for a in schema.arguments):
        allowed.add(n_args + 1)
    if len(values) not in allowed:
        raise _fail(f"a call of {name} passes {len(values)} values; its schema takes {min(allowed)}")
    for arg, value in zip(schema.arguments, values):
        t = arg.type
        optional = type(t).__name__ == "OptionalType"
        if optional:
            if _kind(value) == "Null":
                continue
            t = t.getElementType()
        want = _SCALAR_KIND.get(type(t).__name__)
        if want is not None and _kind(value) != want:
            raise _fail(f"argument {arg.name!r} of a call of {name} is {_kind(value)}, not {want}")


def _check_quant_args(base: str, name: str, values: list) -> None:
    tensor_in, scale, zero_point, qmin, qmax, dtype = values[:6]
    out = values[-1]
    for what, v, kind in (("input", tensor_in, "Tensor"), ("scale", scale, "Double"), ("zero_point", zero_point, "Int"),
                          ("quant_min", qmin, "Int"), ("quant_max", qmax, "Int"), ("dtype", dtype, "Int"),
                          ("out", out, "Tensor")):
        if _kind(v) != kind:
            raise _fail(f"{what} of {name} is {_kind(v)}, not {kind}")
    code = dtype.int_val
    if code not in QUANT_RANGES:
        raise _fail(f"{name} has dtype code {code}, which its kernel does not handle")
    lo, hi = QUANT_RANGES[code]
    if not lo <= qmin.int_val <= qmax.int_val <= hi:
        raise _fail(f"{name} has quant_min {qmin.int_val} and quant_max {qmax.int_val}, outside [{lo}, {hi}] of "
                    f"its dtype or in the wrong order")
    if not qmin.int_val <= zero_point.int_val <= qmax.int_val:
        raise _fail(f"{name} has zero point {zero_point.int_val} outside [{qmin.int_val}, {qmax.int_val}]")
    if not (math.isfinite(scale.double_val) and scale.double_val > 0):
        raise _fail(f"{name} has scale {scale.double_val}; a scale is finite and positive")
    if list(tensor_in.sizes) != list(out.sizes):
        raise _fail(f"{name} reads a tensor of sizes {list(tensor_in.sizes)} and writes one of sizes "
                    f"{list(out.sizes)}; its sizes must be equal (was the program edited to other sizes?)")
    quantized, real = (out, tensor_in) if base.endswith("::quantize_per_tensor") else (tensor_in, out)
    if int(quantized.scalar_type) != code:
        raise _fail(f"{name} has a tensor of dtype code {int(quantized.scalar_type)} where its dtype is {code}")
    if int(real.scalar_type) not in FLOAT_CODES:
        raise _fail(f"{name} has a tensor of dtype code {int(real.scalar_type)} where a float tensor is expected")


def _check_per_channel_args(base: str, name: str, values: list) -> None:
    scales = values[1]
    if _kind(scales) != "Tensor":
        raise _fail(f"scales of {name} is {_kind(scales)}, not Tensor")
    allowed = _PER_CHANNEL_SCALES[base]
    if int(scales.scalar_type) not in {int(c) for c in allowed}:
        raise _fail(f"{name} has scales of dtype code {int(scales.scalar_type)}; its kernel aborts unless they are "
                    f"{' or '.join(c.name.lower() for c in allowed)}")

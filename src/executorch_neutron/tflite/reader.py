"""Read a TFLite flatbuffer back: the model object and each operator's name, the one way this package does it.

An operator code carries its builtin code twice (`deprecatedBuiltinCode`, an int8 kept for old readers, and
`builtinCode`); the real code is the larger of the two (TFLite's own `GetBuiltinCode`), which is what
`tflite/builder.py` writes.
"""

from __future__ import annotations

from ai_edge_litert import schema_py_generated as schema

BUILTIN_NAMES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


def read_model(data: bytes | bytearray | memoryview) -> schema.ModelT:
    """The object model of a TFLite flatbuffer (raises whatever the flatbuffer parser raises on damage)."""
    return schema.ModelT.InitFromPackedBuf(bytearray(data), 0)


def builtin_code(opcode: schema.OperatorCodeT) -> int:
    return max(opcode.builtinCode, opcode.deprecatedBuiltinCode)


def opcode_name(opcode: schema.OperatorCodeT) -> str:
    """'CONV_2D', ...; a custom operator's custom code ('NeutronGraph'); the number of a code this schema lacks."""
    code = builtin_code(opcode)
    if code == schema.BuiltinOperator.CUSTOM:
        custom = opcode.customCode
        return custom.decode(errors="replace") if isinstance(custom, (bytes, bytearray)) else str(custom or "CUSTOM")
    return BUILTIN_NAMES.get(code, str(code))


def op_name(model: schema.ModelT, op: schema.OperatorT) -> str:
    return opcode_name(model.operatorCodes[op.opcodeIndex])


def tensor_name(subgraph: schema.SubGraphT, index: int) -> str:
    raw = subgraph.tensors[index].name
    return raw.decode(errors="replace") if isinstance(raw, (bytes, bytearray)) else str(raw)

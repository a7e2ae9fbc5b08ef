"""Sizes of what our converter and passes write, for every back end, one name per fact.

Constraint texts (SUPPORTED_OPS.md), checks and passes are formatted from these names, so a size is changed in one
place. A back end's own kernel limits live in its folder; per-target numbers (num_macs, SRAM) in
target.py.
"""

#: Rows (flat size / channels) of one SOFTMAX op the converter writes (a larger softmax is computed in row chunks).
ROWS = 4096
#: Elements (flat size) of one SOFTMAX op the converter writes.
SOFTMAX_ELEMENTS = 524288
#: Permutation (transpose): tensor rank at most.
PERMUTE_RANK = 4
#: An expand written as concatenations of copies (passes/expand_to_cat.py): inputs of one concatenation at most.
EXPAND_CAT_INPUTS = 16


def one_of(values) -> str:
    """'1 or 2', '2, 3 or 4': a set of allowed values in a constraint text or message."""
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"

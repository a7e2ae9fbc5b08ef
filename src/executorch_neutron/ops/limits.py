"""Numeric limits of Neutron's kernels (NXP's eIQ Neutron operator documentation), one name per fact.

Constraint texts (SUPPORTED_OPS.md), checks and rejection messages are all formatted from these names, so a limit
is changed in one place. Per-target numbers (num_macs, SRAM) live in target.py instead.
"""

#: Convolution: kernel_h * kernel_w * round_up(in_channels, num_macs) weight slots.
CONV_WEIGHT_SLOTS = 65535
#: Softmax (documented profile): channels strictly below this.
SOFTMAX_CHANNELS_BELOW = 2048
#: Softmax (sdk-current profile): at most this many channels.
SOFTMAX_CHANNELS_SDK = 2040
#: Softmax (one SOFTMAX op; a larger softmax is computed in row chunks) and PReLU: rows (flat size / channels) at most.
ROWS = 4096
#: Softmax: elements (flat size) of one SOFTMAX op at most.
SOFTMAX_ELEMENTS = 524288
#: Transposed convolution: stride at most (and at most the kernel).
TRANSPOSED_CONV_STRIDE = 2
#: Pooling: the strides Neutron supports.
POOL_STRIDES = (1, 2)
#: Pooling (sdk-current profile): stride at most.
POOL_STRIDE_SDK = 4096
#: Upsampling: the (equal) H and W scales Neutron supports.
UPSAMPLE_SCALES = (2, 4)
#: Upsampling (sdk-current profile): the H and W scales, each.
UPSAMPLE_SCALES_SDK = (1, 2, 4, 8)
#: Permutation (transpose): tensor rank at most.
PERMUTE_RANK = 4
#: An expand written as concatenations of copies (passes/expand_to_cat.py): inputs of one concatenation at most.
EXPAND_CAT_INPUTS = 16


def one_of(values) -> str:
    """'1 or 2', '2, 3 or 4': a set of allowed values in a constraint text or message."""
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"

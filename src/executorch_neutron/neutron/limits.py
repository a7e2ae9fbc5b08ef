"""Numeric limits of Neutron's kernels (NXP's eIQ Neutron operator documentation and its current SDK), one name per
fact.

Neutron's constraints (neutron/constraints.py) write their texts, which SUPPORTED_OPS.md lists and every rejection
ends with, from these names, so a limit is changed in one place. Per-target numbers (num_macs, SRAM) live in
target.py instead; the sizes of the ops our converter writes for every back end, in ops/limits.py.
"""

#: Convolution: kernel_h * kernel_w * round_up(in_channels, num_macs) weight slots.
CONV_WEIGHT_SLOTS = 65535
#: Softmax (documented profile): channels strictly below this.
SOFTMAX_CHANNELS_BELOW = 2048
#: Softmax (sdk-current profile): at most this many channels.
SOFTMAX_CHANNELS_SDK = 2040
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

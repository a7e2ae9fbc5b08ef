"""Vela's operator limits that the shared front end does not already enforce, as operator-registry constraints
tagged for the Ethos-U back end (`backends=ETHOS_U`), each with Vela's rule as its text, and the Ethos-U reasons for
operators without a kernel.

`register()` adds them to the registry (backends.register_limits calls it, after Neutron's; importing this module
changes nothing). A rejection reads "<what the check found>: <Vela's rule>" (`Constraint.reason`).
`Constraint.applies` checks them for Ethos-U targets only, after the registry's own constraints (every structural
one; not Neutron's hardware and SDK limits, neutron/constraints.py, nor the constraint profiles, which are Neutron's
operator tables): a node that breaks one stays on the CPU with that reason, so Vela never meets an operator it would leave on the CPU (its raw output
refuses any). The limits are read from Vela's own constraint tables where Vela holds them as data; the checks read
the TFLite our converter writes for the node: NHWC for rank-4 activations, a convolution's padding as SAME or an
explicit PAD, a transposed convolution as VALID plus a crop. Preprocess still turns any CPU operator Vela reports
into an error naming it, so an omission here can only fail loudly, never emit a broken payload.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

from ethosu.vela.tflite_model_semantic import TFLiteSemantic as _VelaSemantic
from ethosu.vela.tflite_supported_operators import TFLiteSupportedOperators as _Vela
from ethosu.vela.utils import calc_resize_factor

from ..core import qdq
from ..ops import registry
from ..ops.args import NodeArgs, pool_args, spatial
from ..ops.conv import transposed_kernel
from ..ops.pooling import POOL3D_LEFT, pool3d_left
from ..ops.reduce import rows_view
from ..ops.common import same_padding_matches
from ..ops.registry import Constraint, Limit
from ..ops.shape import EXPAND_LEFT
from ..quantizer.qconfig import WEIGHT_QMAX
from ..target import ETHOS_U as ETHOS_U_KIND

_aten = exir_ops.edge.aten

# Vela's limits, read from Vela's own constraint tables (class data of its TFLite supported-operators checks), so
# they follow the installed Vela; the three Vela checks inline (no class data) are named here and held against Vela
# by compiling their first refused and last accepted cases (tests/ethos_u/test_neutron_limits.py).
STRIDE_RANGE = _Vela.stride_range  # depthwise convolution and max pooling strides
FILTER_RANGE_SAME = _Vela.filter_range  # average pooling kernel with SAME padding
FILTER_HEIGHT_RANGE = _Vela.filter_height_range
FILTER_PRODUCT_MAX = _Vela.filter_product_range[1]
MEAN_REDUCED_AXIS_MAX = _Vela.mean_reduced_axis_max_size  # a reduced width or depth axis
MEAN_PRODUCT_MAX_INT8 = _Vela.mean_kernel_product_int8
MEAN_PRODUCT_MAX_INT16 = _Vela.mean_kernel_product_int16
WEIGHTS_SUM_MAX = _Vela.weights_limit  # convolutions, per output channel: sum of |weight - zero point|
TENSOR_DIM_MAX = _Vela.tens_dim_range[1]  # softmax: IFM width * height
RESIZE_FACTORS = (1, 2, 4, 8)
HALF_PIXEL_FACTOR = 2  # bilinear resize with half-pixel centers (PyTorch's align_corners=False)
TCONV_STRIDES = ((1, 1), (2, 2))  # transposed convolution (H, W); (1, 2) / (2, 1) for a 1-high / 1-wide one

#: edge ops Vela 5.2 refuses with a batch larger than 1 (measured on our TFLite: MEAN, from mean and global average
#: pooling, "Batch must be 1."; RESIZE, from upsample, fails to compile). Convolutions, depthwise convolutions,
#: average pooling, elementwise ops, concatenation, pad, transpose, softmax and activations compile at batch 2.
_BATCH_ONE = frozenset({_aten.mean.dim, _aten._adaptive_avg_pool2d.default, _aten.adaptive_avg_pool2d.default,
                        _aten.upsample_bilinear2d.vec,
                        _aten.upsample_nearest2d.vec})


#: The back ends a Vela limit applies to: Ethos-U targets.
ETHOS_U = frozenset({ETHOS_U_KIND})


def _vela(text: str, ops, found: Callable[[NodeArgs], Optional[str]]) -> Limit:
    """Vela's rule `text` on edge ops `ops` as a limit of the Ethos-U back end: `found(args)` returns None or what
    in the node breaks it (checked on nodes of `ops` only: an entry may hold other ops)."""
    ops = frozenset(ops)

    def check(args: NodeArgs, ctx) -> str | None:
        return found(args) if args.node.target in ops else None

    return Limit(ops, Constraint(text, check, backends=ETHOS_U))


def _batch(a: NodeArgs) -> str | None:
    """The IFM (and IFM2) of the node: its activation operands, not its weights (a reduction written on a
    [rows, 1, last] view, ops/reduce.py, has batch 1)."""
    if a.node.target in (_aten.mean.dim, _aten.sum.dim_IntList) and rows_view(a) is not None:
        return None
    for key in ("input", "self", "other"):
        value = a.get(key)
        if not isinstance(value, Node):
            continue
        val = value.meta.get("val")
        shape = tuple(getattr(val, "shape", ()))
        if len(shape) == 4 and shape[0] != 1:
            return f"batch {shape[0]} (input {value.name})"
    return None


def _depthwise_stride(a: NodeArgs) -> str | None:
    groups, cin = a["groups"], a.shape("input")[1]
    if a["transposed"] or groups == 1 or groups != cin:
        return None
    lo, hi = STRIDE_RANGE
    s = spatial(a["stride"], 1)
    return None if all(lo <= x <= hi for x in s) else f"depthwise stride {s}"


def _pool_stride(a: NodeArgs) -> str | None:
    lo, hi = STRIDE_RANGE
    s = pool_args(a.node).stride
    return None if all(lo <= x <= hi for x in s) else f"stride {s}"


def _avg_kernel_same(a: NodeArgs) -> str | None:
    pool = pool_args(a.node)
    k, s, p = pool.kernel, pool.stride, pool.padding
    if not any(p):
        return None
    lo, hi = FILTER_RANGE_SAME
    ok = lo <= k[0] <= hi and (lo <= k[1] <= hi or s[1] == k[1])
    return None if ok else f"kernel {k} with SAME padding {p}"


def _kernel_size(a: NodeArgs) -> str | None:
    k = pool_args(a.node).kernel
    if not FILTER_HEIGHT_RANGE[0] <= k[0] <= FILTER_HEIGHT_RANGE[1]:
        return f"kernel height {k[0]}"
    return None if k[0] * k[1] <= FILTER_PRODUCT_MAX else f"kernel {k}"


def _mean_axes(a: NodeArgs) -> str | None:
    shape = a.shape("self" if "self" in a else "input")
    dims = a.get("dim")
    dims = range(len(shape)) if not dims else [d % len(shape) for d in dims]
    reduced = [shape[d] for d in dims]
    flat = rows_view(a)
    if flat is not None:
        reduced = [flat[2]]  # reduced as one axis (ops/reduce.py)
    longest = max(reduced, default=1)
    if longest > MEAN_REDUCED_AXIS_MAX:
        return f"a reduced axis of {longest} elements"
    total = math.prod(reduced)
    if _ifm_int16(a):
        return None if total <= MEAN_PRODUCT_MAX_INT16 else f"{total} reduced int16 elements"
    return None if total <= MEAN_PRODUCT_MAX_INT8 else f"{total} reduced elements"


def _mean_depth(a: NodeArgs) -> str | None:
    """A MEAN in PyTorch's dimension order (reduce_dims: sum, and mean over other dims than H and W of a rank-4
    tensor) reduces the TFLite depth axis when it reduces the last dim."""
    shape = a.shape("self")
    rank = len(shape)
    dims = a.get("dim")
    dims = range(rank) if not dims else [d % rank for d in ([dims] if isinstance(dims, int) else dims)]
    if a.node.target == _aten.mean.dim and rank == 4 and sorted(dims) == [2, 3]:
        return None  # the spatial mean: MEAN over the NHWC H and W axes
    if rank < 3 or rank - 1 not in dims or rows_view(a) is not None:
        return None  # reduced on a [rows, 1, last] view (ops/reduce.py): the IFM has a unit axis
    h, w, c = ((1,) * (4 - rank) + tuple(shape))[-3:]
    return None if 1 in (h, w, c) else f"a reduced depth (last) axis of an IFM {h}x{w}x{c}"


def _global_pool(a: NodeArgs) -> str | None:
    h, w = a.shape("self")[2:]
    if tuple(a["output_size"]) != (1, 1):
        return None
    longest = max(h, w)
    return None if longest <= MEAN_REDUCED_AXIS_MAX else f"a reduced axis of {longest} elements"


def _conv_kind(a: NodeArgs) -> str:
    """'transposed', 'depthwise' or 'conv': the TFLite operator our converter writes for an aten.convolution."""
    if a["transposed"]:
        return "transposed"
    groups = a["groups"]
    return "depthwise" if groups != 1 and groups == a.shape("input")[1] else "conv"


def _weights_sum(a: NodeArgs) -> str | None:
    """The weight values are not known while partitioning (ExecuTorch hands the partitioner a program of fake
    tensors), so the bound is the worst case of NeutronQuantizer's weights: |weight| <= WEIGHT_QMAX, zero point 0."""
    w = a.shape("weight")  # OI(HW), transposed IO(HW): one output channel reads dim 1 (0) x kernel
    per_channel = (w[0] if a["transposed"] else w[1]) * math.prod(w[2:])
    worst = per_channel * WEIGHT_QMAX
    if worst <= WEIGHTS_SUM_MAX:
        return None
    return f"{per_channel} weights per output channel can sum to {worst}"


def _window(a: NodeArgs):
    """(stride, padding, dilation, input H and W, SAME) of a 2-D convolution or average pool as the converter writes
    it: TFLite SAME padding where it equals PyTorch's (for a pool: padding not counted in the average), else a PAD
    op, then VALID; None for other convolutions."""
    if a.node.target == _aten.avg_pool2d.default:
        pool = pool_args(a.node)
        return pool.stride, pool.padding, (1, 1), a.shape("self")[2:], any(pool.padding) and not a["count_include_pad"]
    if _conv_kind(a) != "conv" or len(a.shape("input")) != 4:
        return None
    k, s = a.shape("weight")[2:], spatial(a["stride"], 1)
    p, d, hw = spatial(a["padding"], 0), spatial(a["dilation"], 1), a.shape("input")[2:]
    return s, p, d, hw, any(p) and all(same_padding_matches(hw[i], k[i], s[i], d[i], p[i]) for i in range(2))


def _large_stride(a: NodeArgs) -> str | None:
    """Stride above 3 with TFLite SAME padding or dilation."""
    window = _window(a)
    if window is None:
        return None
    s, _, d, _, same = window
    if max(s) <= STRIDE_RANGE[1] or not (same or any(x != 1 for x in d)):
        return None
    return f"stride {s} with {'SAME padding' if same else 'dilation'}"


def _stride_rows(a: NodeArgs) -> str | None:
    """Vela's stride rule of convolutions on the TFLite op: a stride H above 3 only when the OFM is one row high, a
    stride W above 3 only when the OFM is one column wide or Vela can fold the IFM width so the stride becomes 2 or
    3 (`calc_resize_factor`, on the IFM the op reads, padded unless SAME). (Vela states the rule for average pools
    too, but compiles a tiling 5x5 average pool on 20x20: measured by the backend suite, so pools are not held to
    it.)"""
    if a.node.target == _aten.avg_pool2d.default:
        return None
    window = _window(a)
    if window is None:
        return None
    s, p, _, hw, same = window
    (oh, ow), ifm_w = a.out_shape[2:], hw[1] + (0 if same else 2 * p[1])
    if oh > 1 and s[0] > STRIDE_RANGE[1]:
        return f"stride H {s[0]} with an OFM {oh} rows high"
    if ow > 1 and s[1] > STRIDE_RANGE[1] and calc_resize_factor(ifm_w, s[1])[1] > STRIDE_RANGE[1]:
        return f"stride W {s[1]} on an IFM {ifm_w} wide"
    return None


def _tconv(a: NodeArgs) -> str | None:
    if not a["transposed"]:
        return None
    (sh, sw), (kh, kw), (ih, iw) = tuple(a["stride"]), transposed_kernel(a), a.shape("input")[2:]
    ok = (sh, sw) in TCONV_STRIDES or ((sh, sw) == (1, 2) and ih == kh == 1) or (
        (sh, sw) == (2, 1) and iw == kw == 1)
    if not ok:
        return f"stride {[sh, sw]}"
    # the converter writes VALID padding with the full (in - 1) * stride + kernel output, then crops
    if kh < sh or kw < sw:
        return f"kernel {[kh, kw]} smaller than stride {[sh, sw]}"
    op, p = list(a["output_padding"]), list(a["padding"])
    if any(o > x for o, x in zip(op, p)):  # the converter then asks for rows past the full output
        return f"output_padding {op} > padding {p}"
    return None


def _softmax_area(a: NodeArgs) -> str | None:
    shape = a.shape("self")
    rank, dim = len(shape), a["dim"] % len(shape)
    if rank == 4 and dim == 1:  # channels-last: NHWC
        h, w = shape[2], shape[3]
    else:
        full = (1,) * (4 - rank) + tuple(shape[-4:])
        h, w = full[1], full[2]
    return None if h * w <= TENSOR_DIM_MAX else f"IFM height {h} x width {w} = {h * w}"


def _resize(a: NodeArgs) -> str | None:
    (ih, iw), (oh, ow) = a.shape("input")[2:], a.out_shape[2:]
    align = bool(a.get("align_corners"))
    if (ih, iw) == (1, 1):
        return None
    if align:
        fh = (oh - 1) / (ih - 1) if ih != 1 else 1
        fw = (ow - 1) / (iw - 1) if iw != 1 else 1
    else:
        fh, fw = oh / ih, ow / iw
    found = f"scales H {fh:g}, W {fw:g}" + (" (align_corners)" if align else "")
    f = HALF_PIXEL_FACTOR  # Vela's half-pixel rule holds even where the general rule takes the same size
    if a.node.target == _aten.upsample_bilinear2d.vec and not align and (oh, ow) != (ih * f, iw * f):
        return f"{found} with half-pixel centers"
    if (ih, iw) == (oh, ow):
        return None
    allowed = RESIZE_FACTORS
    if fh not in allowed or fw not in allowed:
        return found
    if oh != 1 and ow != 1:
        ok = fh == fw
    else:
        ok = fh == ih == 1 or fw == iw == 1
    return None if ok else found


def _ifm_int16(a: NodeArgs) -> str | None:
    """The IFM is int16 (a dequantize of int16 among the node's inputs)."""
    for value in a.node.all_input_nodes:
        if qdq.per_tensor_kind(value) == "dq" and value.args[5] == torch.int16:
            return f"int16 input {value.name}"
    return None


#: Vela's rules on operators it compiles in int8 only (registry.int8_only: NeutronQuantizer quantizes them int8 under
#: an int16 setting, and an int16 node of them stays on the CPU with the rule). Vela 5.2 states "IFM must be int8"
#: for RSQRT too but compiles an int16 RSQRT (measured); its matrix product of two activations (BATCH_MATMUL, and a
#: FULLY_CONNECTED whose weights are not constant) takes int8 only (its supported-operators check, measured on mm and
#: bmm).
INT8_ONLY = (
    ((_aten.hardswish.default,), f"Vela: {_VelaSemantic.constraint_input_8bit.__doc__.rstrip('.')} (HARD_SWISH)"),
    ((_aten.mm.default, _aten.bmm.default),
     "Vela: a matrix product of two activations (BATCH_MATMUL, or FULLY_CONNECTED with dynamic weights) must have "
     "an int8 IFM"),
)

_MAX_POOL = frozenset({_aten.max_pool2d.default, _aten.max_pool2d_with_indices.default})
_CONV = frozenset({_aten.convolution.default})

#: Vela's limits in the order they are added (each op's entry checks its own in this order)
LIMITS: tuple[Limit, ...] = (
    _vela("Batch must be 1 (MEAN and RESIZE)", _BATCH_ONE, _batch),
    _vela("Kernel stride must be in the range (1,3) for depthwise convolution",
                   frozenset({_aten.convolution.default}), _depthwise_stride),
    _vela("Stride values for both width and height must be in the range [1, 3] for max pooling",
                   _MAX_POOL, _pool_stride),
    _vela("Kernel filter values for both width and height must be in the range [1, 8] with SAME padding "
                   "(average pooling)", frozenset({_aten.avg_pool2d.default}), _avg_kernel_same),
    _vela("Kernel filter height must be in the range [1, 256] and the product of kernel width and height "
                   "at most 65536 (pooling)", _MAX_POOL | {_aten.avg_pool2d.default}, _kernel_size),
    _vela("MEAN: a reduced width or depth axis must be no greater than 4096, the product of the reduced "
                   "axes no greater than 16777216 for int8 and 65536 for int16", frozenset({_aten.mean.dim}), _mean_axes),
    _vela("MEAN: a reduced width axis must be no greater than 4096 (global average pooling becomes MEAN)",
                   frozenset({_aten._adaptive_avg_pool2d.default}), _global_pool),
    _vela("MEAN: reduction over the depth (last) axis is only supported if any of the IFM's height, width "
                   "and depth is 1", frozenset({_aten.mean.dim, _aten.sum.dim_IntList}), _mean_depth),
    _vela("The absolute sum of the weights of one output channel cannot exceed 8323072 (127 x 65536): with "
                   "NeutronQuantizer's int8 weights in [-127, 127], at most 65536 weights per output channel "
                   "(convolutions)", _CONV, _weights_sum),
    _vela("Stride > 3 is only supported with dilation 1 and VALID padding (convolutions, average pooling)",
                   _CONV | {_aten.avg_pool2d.default}, _large_stride),
    _vela("Stride H must be in the range [1, 3] when the OFM height is greater than 1; a stride W above 3 needs an "
          "OFM width of 1 or an IFM width that folds it to stride 2 or 3 (convolutions)", _CONV, _stride_rows),
    _vela("Transposed convolution: stride (H, W) (1, 1) or (2, 2), or (1, 2) when the IFM and kernel "
                   "heights are 1, or (2, 1) when their widths are 1; with VALID padding (the converter's) the OFM "
                   "must be IFM x stride + (kernel - stride), so the kernel (dilated) must not be smaller than the "
                   "stride and output_padding not larger than padding",
                   _CONV, _tconv),
    _vela("Softmax: the product of IFM width and height must be less than 65536",
                   frozenset({_aten._softmax.default}), _softmax_area),
    _vela("Resize: IFM 1x1, or OFM equal to IFM, or equal H and W scale factors of 2x, 4x or 8x (a scale of "
                   "1 in a dimension whose OFM size is 1); with align_corners the factors are (OFM - 1) / (IFM - 1); "
                   "bilinear with half-pixel centers (align_corners=False): 2x only",
                   frozenset({_aten.upsample_bilinear2d.vec, _aten.upsample_nearest2d.vec}), _resize),
)

#: Operators Vela has no kernel for, and why (edge ops, reason, what in a node left it there)
NO_KERNEL = (
    ((_aten.argmax.default, _aten.argmin.default),
     "the result is an int64 index, and partitions return int8 tensors only (Vela's ARG_MAX returns int32 indices, "
     "over the last axis of depth <= 127 only; it has no ARG_MIN)", None),
    ((_aten.expand_copy.default,), "Vela has no broadcast copy (TILE / BROADCAST_TO); " + EXPAND_LEFT, None),
    ((_aten._adaptive_avg_pool3d.default, _aten.avg_pool3d.default, _aten.max_pool3d_with_indices.default),
     "Vela pools 2-D planes only; " + POOL3D_LEFT, pool3d_left),
)


def register() -> None:
    """Add Vela's limits, the Ethos-U no-kernel reasons and Vela's int8-only operators to the operator registry
    (idempotent)."""
    registry.add_limits(LIMITS, NO_KERNEL, ETHOS_U, INT8_ONLY)

"""Vela's operator constraints that the shared front end does not already enforce: limits as data, each with the
reason Vela gives (from Vela 5.2's supported-operators checks and its console, measured on our TFLite).

The partitioner applies them on top of the operator registry's constraints for Ethos-U targets (every structural
one; not the Neutron hardware and SDK limits, tagged `backends=NEUTRON` in ops/, nor the constraint profiles,
which are Neutron's operator tables): a node that breaks one stays on the CPU with that reason, so Vela never meets
an operator it would leave on the CPU (its raw output refuses any). Where the registry leaves a Neutron limit to
Neutron targets (kernel sizes, strides, broadcasting, softmax and resize shapes), Vela's own limit for that
operator is here. The checks read the TFLite our converter writes for the node: NHWC for rank-4 activations, a
convolution's padding as SAME or an explicit PAD, a transposed convolution as VALID plus a crop. Preprocess still
turns any CPU operator Vela reports into an error naming it, so an omission here can only fail loudly, never emit a
broken payload.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

from ..ops.args import NodeArgs
from ..ops.reduce import rows_view
from ..ops.common import same_padding_matches
from ..quantizer.qconfig import WEIGHT_QMAX

_aten = exir_ops.edge.aten

#: Vela's limits (Vela 5.2 checks them in its compiled `regor` library; its messages and
#: ethosu/vela/tflite_supported_operators.py name them; each measured on our TFLite with ethos-u-vela 5.2.0)
LIMITS = {
    "stride_range": (1, 3),  # depthwise convolution and max pooling strides
    "filter_range_same": (1, 8),  # average pooling kernel with SAME padding
    "filter_height_range": (1, 256),
    "filter_product_max": 256 * 256,
    "mean_reduced_axis_max": 64 * 64,  # a reduced width or depth axis
    "mean_product_max_int8": 2 ** 24,
    "weights_sum_max": 127 * 65536,  # convolutions, per output channel: sum of |weight - zero point|
    "tensor_dim_max": 65535,  # softmax: IFM width * height
    "resize_factors": (1, 2, 4, 8),
    "half_pixel_factor": 2,  # bilinear resize with half-pixel centers (PyTorch's align_corners=False)
    "tconv_strides": ((1, 1), (2, 2)),  # transposed convolution (H, W); (1, 2) / (2, 1) for a 1-high / 1-wide one
}

#: edge ops Vela 5.2 refuses with a batch larger than 1 (measured on our TFLite: MEAN, from mean and global average
#: pooling, "Batch must be 1."; RESIZE, from upsample, fails to compile). Convolutions, depthwise convolutions,
#: average pooling, elementwise ops, concatenation, pad, transpose, softmax and activations compile at batch 2.
_BATCH_ONE = frozenset({_aten.mean.dim, _aten._adaptive_avg_pool2d.default, _aten.adaptive_avg_pool2d.default,
                        _aten.upsample_bilinear2d.vec,
                        _aten.upsample_nearest2d.vec})


@dataclass(frozen=True)
class VelaConstraint:
    """One Vela limit: `text` is Vela's rule (docs and reasons), `ops` the edge ops it applies to, `check(args)`
    returns None or what in the node breaks it."""

    text: str
    ops: frozenset
    check: Callable[[NodeArgs], Optional[str]]

    def reason(self, node: Node) -> str | None:
        if node.target not in self.ops:
            return None
        try:
            found = self.check(NodeArgs(node))
        except Exception as exc:  # noqa: BLE001 - a check that cannot decide rejects
            found = f"could not be decided ({type(exc).__name__}: {exc})"
        return f"{found}: Vela: {self.text}" if found else None


def _pair(v, default):
    v = default if v is None or v == [] else v
    return tuple(v) * 2 if len(tuple(v)) == 1 else tuple(v)


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
    lo, hi = LIMITS["stride_range"]
    s = _pair(a["stride"], [1])
    return None if all(lo <= x <= hi for x in s) else f"depthwise stride {list(s)}"


def _pool_stride(a: NodeArgs) -> str | None:
    lo, hi = LIMITS["stride_range"]
    s = _pair(a["stride"] or a["kernel_size"], [1])
    return None if all(lo <= x <= hi for x in s) else f"stride {list(s)}"


def _avg_kernel_same(a: NodeArgs) -> str | None:
    k, s, p = _pair(a["kernel_size"], [1]), _pair(a["stride"] or a["kernel_size"], [1]), _pair(a["padding"], [0])
    if not any(p):
        return None
    lo, hi = LIMITS["filter_range_same"]
    ok = lo <= k[0] <= hi and (lo <= k[1] <= hi or s[1] == k[1])
    return None if ok else f"kernel {list(k)} with SAME padding {list(p)}"


def _kernel_size(a: NodeArgs) -> str | None:
    k = _pair(a["kernel_size"], [1])
    if not LIMITS["filter_height_range"][0] <= k[0] <= LIMITS["filter_height_range"][1]:
        return f"kernel height {k[0]}"
    return None if k[0] * k[1] <= LIMITS["filter_product_max"] else f"kernel {list(k)}"


def _mean_axes(a: NodeArgs) -> str | None:
    shape = a.shape("self" if "self" in a else "input")
    dims = a.get("dim")
    dims = range(len(shape)) if not dims else [d % len(shape) for d in dims]
    reduced = [shape[d] for d in dims]
    longest = max(reduced, default=1)
    if longest > LIMITS["mean_reduced_axis_max"]:
        return f"a reduced axis of {longest} elements"
    total = math.prod(reduced)
    return None if total <= LIMITS["mean_product_max_int8"] else f"{total} reduced elements"


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
    return None if longest <= LIMITS["mean_reduced_axis_max"] else f"a reduced axis of {longest} elements"


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
    if worst <= LIMITS["weights_sum_max"]:
        return None
    return f"{per_channel} weights per output channel can sum to {worst}"


def _large_stride(a: NodeArgs) -> str | None:
    """Stride above 3 with TFLite SAME padding (the converter's choice when it equals PyTorch's) or dilation."""
    if a.node.target == _aten.avg_pool2d.default:
        k, s, p = _pair(a["kernel_size"], [1]), _pair(a["stride"] or a["kernel_size"], [1]), _pair(a["padding"], [0])
        same, dilated = any(p) and not a["count_include_pad"], False  # counted padding: PAD, then VALID
        hw = a.shape("self")[2:]
    else:
        if _conv_kind(a) != "conv" or len(a.shape("input")) != 4:
            return None
        k, s = a.shape("weight")[2:], _pair(a["stride"], [1])
        p, d, hw = _pair(a["padding"], [0]), _pair(a["dilation"], [1]), a.shape("input")[2:]
        same = any(p) and all(same_padding_matches(hw[i], k[i], s[i], d[i], p[i]) for i in range(2))
        dilated = any(x != 1 for x in d)
    if max(s) <= LIMITS["stride_range"][1] or not (same or dilated):
        return None
    return f"stride {list(s)} with {'SAME padding' if same else 'dilation'}"


def _tconv(a: NodeArgs) -> str | None:
    if not a["transposed"]:
        return None
    (sh, sw), (kh, kw), (ih, iw) = tuple(a["stride"]), a.shape("weight")[2:], a.shape("input")[2:]
    ok = (sh, sw) in LIMITS["tconv_strides"] or ((sh, sw) == (1, 2) and ih == kh == 1) or (
        (sh, sw) == (2, 1) and iw == kw == 1)
    if not ok:
        return f"stride {[sh, sw]}"
    # the converter writes VALID padding with the full (in - 1) * stride + kernel output, then crops
    return None if kh >= sh and kw >= sw else f"kernel {[kh, kw]} smaller than stride {[sh, sw]}"


def _softmax_area(a: NodeArgs) -> str | None:
    shape = a.shape("self")
    rank, dim = len(shape), a["dim"] % len(shape)
    if rank == 4 and dim == 1:  # channels-last: NHWC
        h, w = shape[2], shape[3]
    else:
        full = (1,) * (4 - rank) + tuple(shape[-4:])
        h, w = full[1], full[2]
    return None if h * w <= LIMITS["tensor_dim_max"] else f"IFM height {h} x width {w} = {h * w}"


def _resize(a: NodeArgs) -> str | None:
    (ih, iw), (oh, ow) = a.shape("input")[2:], a.out_shape[2:]
    align = bool(a.get("align_corners"))
    if (ih, iw) == (1, 1) or (ih, iw) == (oh, ow):
        return None
    if align:
        fh = (oh - 1) / (ih - 1) if ih != 1 else 1
        fw = (ow - 1) / (iw - 1) if iw != 1 else 1
    else:
        fh, fw = oh / ih, ow / iw
    found = f"scales H {fh:g}, W {fw:g}" + (" (align_corners)" if align else "")
    allowed = LIMITS["resize_factors"]
    if fh not in allowed or fw not in allowed:
        return found
    if oh != 1 and ow != 1:
        ok = fh == fw
    else:
        ok = fh == ih == 1 or fw == iw == 1
    if not ok:
        return found
    half_pixel = a.node.target == _aten.upsample_bilinear2d.vec and not align
    f = LIMITS["half_pixel_factor"]
    return None if not half_pixel or (oh, ow) == (ih * f, iw * f) else f"{found} with half-pixel centers"


_MAX_POOL = frozenset({_aten.max_pool2d.default, _aten.max_pool2d_with_indices.default})
_CONV = frozenset({_aten.convolution.default})

CONSTRAINTS: tuple[VelaConstraint, ...] = (
    VelaConstraint("Batch must be 1 (MEAN and RESIZE)", _BATCH_ONE, _batch),
    VelaConstraint("Kernel stride must be in the range (1,3) for depthwise convolution",
                   frozenset({_aten.convolution.default}), _depthwise_stride),
    VelaConstraint("Stride values for both width and height must be in the range [1, 3] for max pooling",
                   _MAX_POOL, _pool_stride),
    VelaConstraint("Kernel filter values for both width and height must be in the range [1, 8] with SAME padding "
                   "(average pooling)", frozenset({_aten.avg_pool2d.default}), _avg_kernel_same),
    VelaConstraint("Kernel filter height must be in the range [1, 256] and the product of kernel width and height "
                   "at most 65536 (pooling)", _MAX_POOL | {_aten.avg_pool2d.default}, _kernel_size),
    VelaConstraint("MEAN: a reduced width or depth axis must be no greater than 4096, the product of the reduced "
                   "axes no greater than 16777216 for int8", frozenset({_aten.mean.dim}), _mean_axes),
    VelaConstraint("MEAN: a reduced width axis must be no greater than 4096 (global average pooling becomes MEAN)",
                   frozenset({_aten._adaptive_avg_pool2d.default}), _global_pool),
    VelaConstraint("MEAN: reduction over the depth (last) axis is only supported if any of the IFM's height, width "
                   "and depth is 1", frozenset({_aten.mean.dim, _aten.sum.dim_IntList}), _mean_depth),
    VelaConstraint("The absolute sum of the weights of one output channel cannot exceed 8323072 (127 x 65536): with "
                   "NeutronQuantizer's int8 weights in [-127, 127], at most 65536 weights per output channel "
                   "(convolutions)", _CONV, _weights_sum),
    VelaConstraint("Stride > 3 is only supported with dilation 1 and VALID padding (convolutions, average pooling)",
                   _CONV | {_aten.avg_pool2d.default}, _large_stride),
    VelaConstraint("Transposed convolution: stride (H, W) (1, 1) or (2, 2), or (1, 2) when the IFM and kernel "
                   "heights are 1, or (2, 1) when their widths are 1; with VALID padding (the converter's) the OFM "
                   "must be IFM x stride + (kernel - stride), so the kernel must not be smaller than the stride",
                   _CONV, _tconv),
    VelaConstraint("Softmax: the product of IFM width and height must be less than 65536",
                   frozenset({_aten._softmax.default}), _softmax_area),
    VelaConstraint("Resize: IFM 1x1, or OFM equal to IFM, or equal H and W scale factors of 2x, 4x or 8x (a scale of "
                   "1 in a dimension whose OFM size is 1); with align_corners the factors are (OFM - 1) / (IFM - 1); "
                   "bilinear with half-pixel centers (align_corners=False): 2x only",
                   frozenset({_aten.upsample_bilinear2d.vec, _aten.upsample_nearest2d.vec}), _resize),
)


def vela_rejection(node: Node) -> str | None:
    """The first Vela constraint `node` breaks, as a reason a user can read, or None."""
    if not hasattr(node.target, "_schema"):  # getitem and other Python callables: not an operator
        return None
    for c in CONSTRAINTS:
        reason = c.reason(node)
        if reason:
            return reason
    return None

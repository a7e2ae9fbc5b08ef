"""Vela's operator constraints that the shared front end does not already enforce: limits as data, each with the
reason Vela gives (from Vela 5.2's supported-operators checks and its console, measured on our TFLite).

The partitioner applies them on top of the operator registry: a node that breaks one stays on the CPU with that
reason, so Vela never meets an operator it would leave on the CPU (its raw output refuses any). The table covers
the cases measured with ethos-u-vela 5.2.0 (depthwise stride 4, a 9x9 SAME average pool, MEAN over more than 4096
elements, batch 2) and their neighbours; preprocess still turns any CPU operator Vela reports into an error
naming it, so an omission here can only fail loudly, never emit a broken payload.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

from ..ops.args import NodeArgs

_aten = exir_ops.edge.aten

#: Vela's limits (ethosu/vela/tflite_supported_operators.py, `TFLiteSupportedOperators`)
LIMITS = {
    "stride_range": (1, 3),  # depthwise convolution and max pooling strides
    "filter_range_same": (1, 8),  # average pooling kernel with SAME padding
    "filter_height_range": (1, 256),
    "filter_product_max": 256 * 256,
    "mean_reduced_axis_max": 64 * 64,  # a reduced width or depth axis
    "mean_product_max_int8": 2 ** 24,
}

#: edge ops Vela 5.2 refuses with a batch larger than 1 (measured on our TFLite: MEAN, from mean and global average
#: pooling, "Batch must be 1."; RESIZE, from upsample, fails to compile). Convolutions, depthwise convolutions,
#: average pooling, elementwise ops, concatenation, pad, transpose, softmax and activations compile at batch 2.
_BATCH_ONE = frozenset({_aten.mean.dim, _aten._adaptive_avg_pool2d.default, _aten.upsample_bilinear2d.vec,
                        _aten.upsample_nearest2d.vec})


@dataclass(frozen=True)
class VelaConstraint:
    """One Vela limit: `text` is Vela's rule (docs and reasons), `ops` the edge ops it applies to (None: all),
    `check` returns None or what in the node breaks it."""


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
    """The IFM (and IFM2) of the node: its activation operands, not its weights."""
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


def _global_pool(a: NodeArgs) -> str | None:
    h, w = a.shape("self")[2:]
    if tuple(a["output_size"]) != (1, 1):
        return None
    longest = max(h, w)
    return None if longest <= LIMITS["mean_reduced_axis_max"] else f"a reduced axis of {longest} elements"


_MAX_POOL = frozenset({_aten.max_pool2d.default, _aten.max_pool2d_with_indices.default})

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

"""Elementwise operators no NPU back end runs, and why (a target's Cortex-M stage may still take them): the
partitioner's reason for them names what is missing instead of a bare "no kernel". Every reason was checked against
each back end's operator tables and compiler; where the NPU does compute an operator from other kernels, a pass in
passes/ writes it out instead (pow_to_mul, elu_decompose, log1p_to_log, ...), and only what those leave reaches
these reasons. They hold for every back end (`no_kernel` without `backends`)."""

from __future__ import annotations

from executorch.exir.dialects._ops import ops as exir_ops

from .registry import no_kernel

_aten = exir_ops.edge.aten


no_kernel((_aten.sqrt.default,), (
    "no square-root kernel (only RSQRT); a 2-norm (torch.norm, linalg.vector_norm, sqrt of a sum of squares) is "
    "written as s * rsqrt(s) where the table runs rsqrt (vector_norm_decompose); any other square root stays"))
no_kernel((_aten.ceil.default, _aten.floor.default, _aten.trunc.default, _aten.round.default),
          "no int8 rounding kernel (TFLite's FLOOR and CEIL are float-only)")
no_kernel((_aten.pow.Tensor_Scalar,), (
    "exponents 2 and 3 become multiplications (pow_to_mul); other exponents (roots, reciprocals, larger powers) "
    "have no kernel"))
no_kernel((_aten.pow.Tensor_Tensor, _aten.pow.Scalar), "no power kernel (an exponent computed at run time)")
no_kernel((_aten.div.Tensor_mode,), (
    "no division kernel: division by a tensor computed at run time, with rounding (the NPUs multiply by constant "
    "reciprocals only)"))
no_kernel((_aten.reciprocal.default,), "no reciprocal kernel: 1 / x of a tensor computed at run time")
no_kernel((_aten.where.self,), (
    "no select kernel: a per-element choice between two values (threshold with a jump, where, masked_fill)"))
no_kernel((_aten.gt.Scalar, _aten.ge.Scalar, _aten.lt.Scalar, _aten.le.Scalar, _aten.eq.Scalar, _aten.ne.Scalar,
           _aten.gt.Tensor, _aten.ge.Tensor, _aten.lt.Tensor, _aten.le.Tensor, _aten.eq.Tensor, _aten.ne.Tensor),
          "no comparison kernel (a boolean result)")
no_kernel((_aten.index.Tensor, _aten.index_select.default, _aten.embedding.default, _aten.gather.default,
           _aten.index_put.default, _aten.scatter.src, _aten.scatter.value), (
    "no gather or scatter kernel: it reads or writes at positions given by an index tensor computed at run time "
    "(int64, which int8 partitions do not take); constant positions become slices (passes/gather_to_slices.py)"))
no_kernel((_aten.topk.default, _aten.sort.default), "no sorting kernel (topk, sort, median)")
no_kernel((_aten.cumsum.default,), "no cumulative-sum kernel")
no_kernel((_aten.flip.default,), "no reverse kernel")
no_kernel((_aten.scalar_tensor.default,), (
    "a scalar made at run time for a select (where), which has no kernel either"))
no_kernel((_aten.sin.default, _aten.cos.default, _aten.erf.default, _aten.sign.default), (
    "no NPU has a lookup-table activation for this function"))

"""ATen pass: a reduction to a 0-d scalar (`x.sum()`, `x.mean()`, `torch.amax(x)`, `x.max()`, `x.amin(dim=(0, 1))`
of a rank-2 x, ...) -> the same reduction over those dims with keepdim, then a reshape to [1], carried as [1] through
the elementwise ops that read it and reshaped to the scalar () only where something else reads it.

A 0-d tensor cannot be a partition's boundary (partition/support.py), so the reduction would stay on the CPU;
NXP's release delegates sum, mean, amax and amin with a scalar result. With keepdim the reduction runs on the NPU
with a (1, ..., 1) output. The scalar is then carried as shape [1] through the elementwise ops that read it
(`torch.norm(x)`'s sum of squares, its rsqrt and products, then `x * norm + 1`): [1] broadcasts onto any shape of
rank >= 1 exactly as () does, so a reader with a larger operand gives the same shape and values, and a reader of
scalars only gives [1] instead of (), carried on in turn; only before a reader of another kind (or the model's
output) is it reshaped to () (a view: no computation, left on the CPU). Runs before quantization
(NeutronQuantizer.transform_for_annotation); the reshapes are annotated like any other view.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..core.exported import schema_args
from .fx_utils import arg, call, finish, refresh_val, rewrite_calls

aten = torch.ops.aten
#: the reductions rewritten, each with the overload that takes (input, dims, keepdim)
_KEEPDIM = {aten.sum.default: aten.sum.dim_IntList, aten.sum.dim_IntList: aten.sum.dim_IntList,
            aten.mean.default: aten.mean.dim, aten.mean.dim: aten.mean.dim,
            aten.amax.default: aten.amax.default, aten.amin.default: aten.amin.default,
            aten.max.default: aten.amax.default, aten.min.default: aten.amin.default}
#: elementwise ops a scalar carried as [1] flows through (a [1] operand broadcasts as a () one does)
_ELEMENTWISE = frozenset({aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor, aten.rsqrt.default,
                          aten.sqrt.default, aten.neg.default, aten.abs.default, aten.relu.default,
                          aten.sigmoid.default, aten.tanh.default, aten.exp.default, aten.log.default,
                          aten.clamp.default, aten.hardtanh.default, aten.maximum.default, aten.minimum.default,
                          aten.pow.Tensor_Scalar, aten.square.default})
_ALL = (aten.sum.default, aten.mean.default, aten.max.default, aten.min.default)  # reduce every dim, no dim arg


def _scalar_reduction_input(node: Node) -> Node | None:
    """The input of a float reduction of a tensor of rank >= 1 to a 0-d value (no dtype conversion), else None."""
    if schema_args(node).get("dtype") is not None:
        return None
    x, out = node.args[0], node.meta.get("val")
    val = x.meta.get("val") if isinstance(x, Node) else None
    ok = (isinstance(val, torch.Tensor) and val.dim() >= 1 and val.is_floating_point()
          and isinstance(out, torch.Tensor) and out.dim() == 0 and out.dtype == val.dtype)
    return x if ok else None


def _rewrite(gm: GraphModule, node: Node) -> Node | None:
    x = _scalar_reduction_input(node)
    if x is None:
        return None
    dims = arg(node, "dim") if node.target not in _ALL else None
    dims = [dims] if isinstance(dims, int) else list(dims or range(x.meta["val"].dim()))
    reduced = call(gm, _KEEPDIM[node.target], (x, dims, True), node)
    return call(gm, aten.reshape.default, (reduced, [1]), node)


def _zero_dim(value) -> bool:
    val = value.meta.get("val") if isinstance(value, Node) else None
    return isinstance(val, torch.Tensor) and val.dim() == 0


def _elementwise(node: Node) -> bool:
    return node.op == "call_function" and node.target in _ELEMENTWISE and not node.kwargs


def _carry_as_rank1(gm: GraphModule, seeds: list[Node]) -> None:
    """Carry the [1] values `seeds` on through the elementwise ops of scalars that read only them (and numbers);
    give every other reader that needs it () back through a reshape."""
    carried = set(seeds)
    for node in gm.graph.nodes:  # in graph order: an op's operands are decided before it
        operands = [a for a in node.args if isinstance(a, Node)]
        if node not in carried and _elementwise(node) and _zero_dim(node) and operands and all(
                a in carried for a in operands):
            refresh_val(node)
            carried.add(node)
    for node in [n for n in gm.graph.nodes if n in carried]:
        readers = [u for u in node.users if u not in carried and not (_elementwise(u) and not _zero_dim(u))]
        if not readers:
            continue  # (an elementwise reader with a larger operand: [1] broadcasts onto it as () did)
        if node in seeds and len(readers) == len(node.users):  # nobody takes [1]: the reshape is to () itself
            node.args = (node.args[0], [])
            refresh_val(node)
            continue
        with gm.graph.inserting_after(node):
            scalar = call(gm, aten.reshape.default, (node, []), node)
        for reader in readers:
            reader.replace_input_with(node, scalar)


def reduce_all_keepdim(gm: GraphModule) -> GraphModule:
    seeds: list[Node] = []

    def rewrite(gm: GraphModule, node: Node) -> Node | None:
        out = _rewrite(gm, node)
        seeds.extend([out] if out is not None else [])
        return out

    gm = rewrite_calls(gm, tuple(_KEEPDIM), rewrite)
    if seeds:
        _carry_as_rank1(gm, seeds)
        finish(gm)
    return gm

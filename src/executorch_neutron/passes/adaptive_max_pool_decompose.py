"""ATen pass: adaptive max pools -> a `max_pool2d` where each output size divides its input size (kernel = stride =
input / output), else a max over each pooled axis in turn; a pool whose indices are read -> amax and argmax per
window, because adaptive max pools are outside the Core ATen opset (`to_edge` refuses them; ExecuTorch's portable
kernels lack them).

- `adaptive_max_pool2d` (also `nn.AdaptiveMaxPool1d`, which exports as a 2-D one): where each output size divides
  its input size, a `max_pool2d` with kernel = stride = input / output (global pooling: kernel = the input, stride
  1, within every pool stride limit). Otherwise, and for `adaptive_max_pool3d`, a max over each pooled axis in turn
  (a max over a box is the max over each of its axes): per axis a reshape + amax where the size divides, else one
  slice + amax per output bin [floor(i*in/out), ceil((i+1)*in/out)) and a cat.
- `adaptive_max_pool1d`: the 2-D pool on unsqueeze(x, -2), squeezed back (its indices into a 1 x L plane are the
  indices into L), then rewritten as above.
- indices read, output dividing the input: per window amax and argmax (turned into the flat index into D x H x W),
  on the CPU; a 2-D pool as a 3-D one over a 1 x H x W volume. Indices read and an output that does not divide the
  input: no kernel in any runtime, the lowering stops with a `NotImplementedError` naming the pool.

The pools return values and indices (read through getitem), so the pass rewrites their readers itself rather than
through `fx_utils.rewrite_calls`. Runs before quantization.
"""

from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, finish, new_parameter

aten = torch.ops.aten


def _shape(node) -> list[int] | None:
    val = node.meta.get("val") if isinstance(node, Node) else None
    return list(val.shape) if isinstance(val, torch.Tensor) else None


def _getitems(node: Node) -> dict[int, list[Node]]:
    out: dict[int, list[Node]] = {}
    for user in node.users:
        if user.target is operator.getitem:
            out.setdefault(int(user.args[1]), []).append(user)
    return out


def _replace_item(gm, node: Node, index: int, new: Node) -> None:
    for item in _getitems(node).get(index, []):
        item.replace_all_uses_with(new)
        gm.graph.erase_node(item)


def _max_over_axis(gm, x: Node, axis: int, size: int, out: int, like: Node) -> Node:
    """The adaptive max along one axis of x: `size` -> `out` bins."""
    shape = _shape(x)
    if out == size:
        return x
    if size % out == 0:
        k = size // out
        split = shape[:axis] + [out, k] + shape[axis + 1:]
        viewed = call(gm, aten.reshape.default, (x, split), like)
        return call(gm, aten.amax.default, (viewed, [axis + 1], False), like)
    bins = []
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        piece = call(gm, aten.slice.Tensor, (x, axis, start, end), like)
        bins.append(call(gm, aten.amax.default, (piece, [axis], True), like))
    return call(gm, aten.cat.default, (bins, axis), like)


def _adaptive_max1d(gm: GraphModule, node: Node) -> None:
    """adaptive_max_pool1d(x, [o]) -> adaptive_max_pool2d(unsqueeze(x, -2), [1, o]), squeezed back (its indices
    into a 1 x L plane are the indices into L), then rewritten as a 2-D one."""
    x = node.args[0]
    out = list(node.args[1])
    with gm.graph.inserting_before(node):
        x2 = call(gm, aten.unsqueeze.default, (x, -2), node)
        pool = call(gm, aten.adaptive_max_pool2d.default, (x2, [1, *out]), node)
        items = [call(gm, operator.getitem, (pool, i), node) for i in (0, 1)]
        flat = [call(gm, aten.squeeze.dims, (item, [-2]), node) for item in items]
    for i, new in enumerate(flat):
        _replace_item(gm, node, i, new)
    gm.graph.erase_node(node)
    for dead in (*flat, *items):
        if not dead.users:
            gm.graph.erase_node(dead)
    _adaptive_max(gm, pool)


def _floor_div(gm: GraphModule, x: Node, k: int, like: Node) -> Node:
    node = gm.graph.call_function(aten.div.Tensor_mode, (x, k), {"rounding_mode": "floor"})
    node.meta.update({key: like.meta[key] for key in ("nn_module_stack", "stack_trace") if key in like.meta})
    node.meta["val"] = torch.div(x.meta["val"], k, rounding_mode="floor")
    return node


def _max_pool3d_with_indices(gm: GraphModule, node: Node, x: Node, shape: list[int], outs: list[int]):
    """Values and indices of a 3-D max pool with kernel = stride = input / output: each window's elements on a last
    axis (reshape + permute), amax and argmax over it, and the argmax turned into the flat index into D x H x W."""
    *lead, d, h, w = shape
    (od, oh, ow), (kd, kh, kw) = outs, (d // outs[0], h // outs[1], w // outs[2])
    r = len(lead)
    base = (torch.arange(od).view(od, 1, 1) * kd * h * w + torch.arange(oh).view(1, oh, 1) * kh * w
            + torch.arange(ow).view(1, 1, ow) * kw)
    split = call(gm, aten.reshape.default, (x, [*lead, od, kd, oh, kh, ow, kw]), node)
    order = [*range(r), r, r + 2, r + 4, r + 1, r + 3, r + 5]
    windows = call(gm, aten.reshape.default, (call(gm, aten.permute.default, (split, order), node),
                                              [*lead, od, oh, ow, kd * kh * kw]), node)
    values = call(gm, aten.amax.default, (windows, [-1], False), node)
    local = call(gm, aten.argmax.default, (windows, -1, False), node)
    a = _floor_div(gm, local, kh * kw, node)
    b = call(gm, aten.remainder.Scalar, (_floor_div(gm, local, kw, node), kh), node)
    c = call(gm, aten.remainder.Scalar, (local, kw), node)
    offset = call(gm, aten.add.Tensor, (call(gm, aten.add.Tensor, (call(gm, aten.mul.Tensor, (a, h * w), node),
                                                                    call(gm, aten.mul.Tensor, (b, w), node)), node), c),
                  node)
    indices = call(gm, aten.add.Tensor, (offset, new_parameter(gm, "_pool_base", base, x)), node)  # x: a fake value
    return values, indices


def _adaptive_max(gm: GraphModule, node: Node) -> None:
    x = node.args[0]
    vals = node.meta.get("val")
    shape = _shape(x)
    out_shape = list(vals[0].shape) if isinstance(vals, (tuple, list)) and vals else None
    if shape is None or out_shape is None:
        return
    n = 3 if node.target == aten.adaptive_max_pool3d.default else 2
    sizes, outs = shape[-n:], out_shape[-n:]
    items = _getitems(node)
    wants_indices = any(len(u.users) for u in items.get(1, []))
    divides = all(s % o == 0 for s, o in zip(sizes, outs))
    with gm.graph.inserting_before(node):
        if wants_indices and divides:
            # a 2-D pool as a 3-D one over a 1 x H x W volume (its flat indices are the same); not
            # max_pool2d_with_indices, whose indices ExecuTorch's Cortex-M passes cannot keep
            x3 = x if n == 3 else call(gm, aten.unsqueeze.default, (x, -3), node)
            outs3 = outs if n == 3 else [1, *outs]
            values, indices = _max_pool3d_with_indices(gm, node, x3, _shape(x3), outs3)
            if n == 2:
                values, indices = (call(gm, aten.squeeze.dims, (v, [-3]), node) for v in (values, indices))
            _replace_item(gm, node, 0, values)
            _replace_item(gm, node, 1, indices)
            gm.graph.erase_node(node)
            return
        if n == 2 and divides:
            # stride 1 on a global axis (one window: any stride gives the same output), within every pool
            # stride limit (Vela's [1, 3], Neutron's)
            values = call(gm, aten.max_pool2d.default, (x, [s // o for s, o in zip(sizes, outs)],
                                                        [s // o if o > 1 else 1 for s, o in zip(sizes, outs)]), node)
        elif wants_indices:
            name = "adaptive_max_pool3d" if n == 3 else "adaptive_max_pool2d"
            raise NotImplementedError(
                f"{node.name}: {name} with return_indices=True from {sizes} to {outs} has no kernel in any runtime "
                f"(ExecuTorch's portable kernels have no adaptive max pool and no 3-D max pool, the NPU returns no "
                f"indices): use return_indices=False, or a pool whose output size divides its input size")
        else:
            values = x
            rank = len(shape)
            for axis, (s, o) in enumerate(zip(sizes, outs)):
                values = _max_over_axis(gm, values, rank - n + axis, s, o, node)
    _replace_item(gm, node, 0, values)
    for item in _getitems(node).get(1, []):
        gm.graph.erase_node(item)
    if not node.users:
        gm.graph.erase_node(node)


_REWRITES = {aten.adaptive_max_pool1d.default: _adaptive_max1d, aten.adaptive_max_pool2d.default: _adaptive_max,
             aten.adaptive_max_pool3d.default: _adaptive_max}


def adaptive_max_pool_decompose(gm: GraphModule) -> GraphModule:
    nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _REWRITES]
    for node in nodes:
        _REWRITES[node.target](gm, node)
    return finish(gm) if nodes else gm

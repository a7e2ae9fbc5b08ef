"""ATen pass: nn.LSTM, nn.GRU and nn.RNN unrolled over time into fully connected layers, sigmoid / tanh / relu and
elementwise mul / add / sub, one step per time step, per layer and direction.

    LSTM  i, f, g, o = s(Wi x + Ui h + bi), s(Wf x + Uf h + bf), tanh(Wg x + Ug h + bg), s(Wo x + Uo h + bo)
          c' = f * c + i * g                h' = o * tanh(c')
    GRU   r, z = s(Wr x + Ur h + br), s(Wz x + Uz h + bz)
          n = tanh(Wn x + b_in + r * (Un h + b_hn))          h' = n + z * (h - n)
          (h - n is h + neg(n) where the target's operator table has no subtraction: Neutron's documented one)
    RNN   h' = tanh(W x + U h + b)   (relu for nonlinearity="relu")

Each gate has its own fully connected layers (the rows of the layer's weights that compute it), so every gate's
pre-activation gets its own int8 scale, and the input and recurrent biases of a gate are one bias (the GRU's
n gate keeps b_hn inside r * (...)). A zero initial state (no `hx`, or constant zeros) drops the terms it
multiplies at the first step; a sequence that repeats one step along time (an autoencoder's decoder input) is
projected once. The step input is a slice of the sequence along its time dim; the outputs are the
hidden states concatenated along time (the two directions of a bidirectional layer side by side), and h_n / c_n
the last states stacked per layer and direction, so the graph PyTorch's quantized model computes is the one
the NPU runs. ExecuTorch would otherwise decompose the recurrent op after quantization into float ops on the
CPU. Left alone: packed sequences (`aten.lstm.data`), LSTM projections (`proj_size`), dropout in training mode,
weights that are not constants. The single-step cells (nn.LSTMCell, nn.GRUCell, nn.RNNCell, what a streaming
model calls once per frame with its state as input and output) become one such step. Runs before quantization.
"""

from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node

from .fx_utils import call, constant, finish, new_parameter

aten = torch.ops.aten

#: recurrent op -> (cell kind, gates per layer); the cells are written out in `_Cell.step`
_KINDS = {aten.lstm.input: ("lstm", 4), aten.gru.input: ("gru", 3), aten.rnn_tanh.input: ("rnn_tanh", 1),
          aten.rnn_relu.input: ("rnn_relu", 1)}
#: the single-step cells (nn.LSTMCell, nn.GRUCell, nn.RNNCell: x [B, in], states [B, H])
_CELLS = {aten.lstm_cell.default: ("lstm", 4), aten.gru_cell.default: ("gru", 3),
          aten.rnn_tanh_cell.default: ("rnn_tanh", 1), aten.rnn_relu_cell.default: ("rnn_relu", 1)}
_MADE = "rnn_unroll_parameters"  # gm.meta key: the parameters this pass made (those left unread are dropped)
_REPEATS = {aten.expand.default, aten.repeat.default}
_ZERO_MAKERS = {aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default}


def _is_zero(gm: GraphModule, node) -> bool:
    if not isinstance(node, Node):
        return False
    if node.op == "call_function" and (node.target in _ZERO_MAKERS or (
            node.target in (aten.full.default, aten.new_full.default) and node.args[-1] == 0)):
        return True
    value = constant(gm, node)
    return value is not None and not bool(value.any())


class _Cell:
    """Builds the graph of recurrent steps (inserted before the recurrent node `node`)."""

    def __init__(self, gm: GraphModule, node: Node, kind: str, gates: int, w_hh: Node, with_sub: bool = True):
        self.gm, self.node, self.kind, self.gates, self.with_sub = gm, node, kind, gates, with_sub
        self.hidden = int(constant(gm, w_hh).shape[1])
        self._cache: dict = {}

    # -- small builders --------------------------------------------------------------------------------------

    def op(self, target, *args) -> Node:
        return call(self.gm, target, args, self.node)

    def param(self, stem: str, value: torch.Tensor, like: Node) -> Node:
        node = new_parameter(self.gm, f"_neutron_{self.kind}_{stem}", value, like)
        self.gm.meta.setdefault(_MADE, []).append(node.target)
        return node

    def cached(self, stem: str, value: torch.Tensor, shape: list[int], like: Node) -> Node:
        """`value` reshaped to `shape` as a parameter made once (the GRU's b_hn, read at every step)."""
        key = (stem, id(value))
        if key not in self._cache:
            self._cache[key] = (value, self.param(stem, value.reshape(shape), like))  # value kept: its id stays
        return self._cache[key][1]

    def linear(self, x: Node, w: Node, b: Node | None) -> Node:
        """x W^T + b, made once per (x, W): a repeated step input is projected once."""
        key = ("linear", x, w)
        if key not in self._cache:
            self._cache[key] = self.op(aten.linear.default, x, w, b)
        return self._cache[key]

    def add(self, a: Node, b: Node | None) -> Node:
        return a if b is None else self.op(aten.add.Tensor, a, b)

    def minus(self, a: Node, b: Node) -> Node:
        """a - b: a SUB, or where the target's table has none, a + neg(b) (neg: MUL by the exact -1)."""
        if self.with_sub:
            return self.op(aten.sub.Tensor, a, b)
        return self.op(aten.add.Tensor, a, self.op(aten.neg.default, b))

    def cat(self, parts: list[Node], dim: int) -> Node:
        return parts[0] if len(parts) == 1 else self.op(aten.cat.default, parts, dim)

    # -- the cell ----------------------------------------------------------------------------------------------

    def weights(self, w_ih: Node, w_hh: Node, b_ih: Node | None, b_hh: Node | None, tag: str):
        """Per gate: (input weight, recurrent weight, input-side bias) parameter nodes and the recurrent-side bias
        (a tensor: only the GRU's n gate has one)."""
        wi, wh = constant(self.gm, w_ih).detach(), constant(self.gm, w_hh).detach()
        vector = lambda b: torch.zeros(wi.shape[0]) if b is None else constant(self.gm, b).detach()  # noqa: E731
        bi, bh = (None, None) if b_ih is None and b_hh is None else (vector(b_ih), vector(b_hh))
        H, out = self.hidden, []
        for g in range(self.gates):
            rows = slice(g * H, (g + 1) * H)
            split_bias = self.kind == "gru" and g == 2  # b_hn stays inside r * (U h + b_hn)
            b_x = None if bi is None else (bi[rows] if split_bias else bi[rows] + bh[rows])
            b_h = None if bh is None or not split_bias else bh[rows]
            out.append((self.param(f"w_{tag}g{g}_", wi[rows], w_ih), self.param(f"u_{tag}g{g}_", wh[rows], w_hh),
                        None if b_x is None else self.param(f"b_{tag}g{g}_", b_x, w_ih), b_h))
        return out

    def step(self, w, x: Node, h: Node | None, c: Node | None):
        """One time step: (h', c') from input x [B, in] and state h, c [B, H] (None: zero)."""
        pre = [self.add(self.linear(x, wx, bx), None if h is None else self.linear(h, wh, None))
               for wx, wh, bx, _ in w[: (2 if self.kind == "gru" else self.gates)]]
        sig = lambda t: self.op(aten.sigmoid.default, t)  # noqa: E731
        tanh = lambda t: self.op(aten.tanh.default, t)  # noqa: E731
        if self.kind == "lstm":
            i, f, g, o = sig(pre[0]), sig(pre[1]), tanh(pre[2]), sig(pre[3])
            c = self.add(self.op(aten.mul.Tensor, i, g), None if c is None else self.op(aten.mul.Tensor, f, c))
            return self.op(aten.mul.Tensor, o, tanh(c)), c
        if self.kind == "gru":
            r, z = sig(pre[0]), sig(pre[1])
            wx, wh, bx, bh = w[2]
            if h is None:  # zero state: U_n h + b_hn is b_hn, a [1, H] constant
                hn = None if bh is None else self.cached("bhn_row_", bh, [1, -1], wh)
            else:
                hn = self.linear(h, wh, None if bh is None else self.cached("bhn_", bh, [-1], wh))
            n = tanh(self.add(self.linear(x, wx, bx), None if hn is None else self.op(aten.mul.Tensor, r, hn)))
            if h is None:
                return self.minus(n, self.op(aten.mul.Tensor, z, n)), None
            return self.add(n, self.op(aten.mul.Tensor, z, self.minus(h, n))), None
        act = aten.tanh.default if self.kind == "rnn_tanh" else aten.relu.default
        return self.op(act, pre[0]), None


class _Unroll(_Cell):
    """The unrolled graph of one recurrent layer stack (aten.lstm.input, gru.input, rnn_*.input)."""

    def __init__(self, gm: GraphModule, node: Node, kind: str, gates: int, with_sub: bool):
        x, hx, params, self.has_bias, self.layers, _, _, bidirectional, self.batch_first = node.args[:9]
        super().__init__(gm, node, kind, gates, params[1], with_sub)
        self.x = x
        self.dirs = 2 if bidirectional else 1
        self.hx = list(hx) if kind == "lstm" else [hx]
        self.params = list(params)
        shape = x.meta["val"].shape
        self.steps, self.batch = (shape[1], shape[0]) if self.batch_first else (shape[0], shape[1])
        self.tdim = 1 if self.batch_first else 0

    def time_shape(self, n: int) -> list[int]:
        """[B, n, H] (batch_first) or [n, B, H]."""
        return [self.batch, n, self.hidden] if self.batch_first else [n, self.batch, self.hidden]

    def layer_weights(self, layer: int, direction: int):
        per = 4 if self.has_bias else 2
        p = self.params[(layer * self.dirs + direction) * per:][:per]
        return self.weights(p[0], p[1], p[2] if self.has_bias else None, p[3] if self.has_bias else None,
                            f"l{layer}d{direction}")

    def initial(self, which: int, k: int) -> Node | None:
        """The initial state `which` (0: h, 1: c) of layer-direction k as [B, H], or None when it is zero."""
        state = self.hx[which]
        if _is_zero(self.gm, state):
            return None
        piece = self.op(aten.slice.Tensor, state, 0, k, k + 1)
        return self.op(aten.reshape.default, piece, [self.batch, self.hidden])

    # -- the whole op --------------------------------------------------------------------------------------------

    def step_inputs(self) -> list[Node]:
        """The input of each time step as [B, in]: slices of the sequence, or, for a sequence that repeats one
        step along time (an autoencoder's decoder input, `z.unsqueeze(1).expand(...)` / `.repeat(...)`), that
        step at every time step."""
        width = self.x.meta["val"].shape[2]
        src = self.x.args[0] if self.x.op == "call_function" and self.x.target in _REPEATS else None
        val = src.meta.get("val") if isinstance(src, Node) else None
        if isinstance(val, torch.Tensor) and val.dim() == 3 and val.shape[self.tdim] == 1 and \
                val.shape[1 - self.tdim] == self.batch and val.shape[2] == width:
            return [self.op(aten.reshape.default, src, [self.batch, width])] * self.steps
        return [self.op(aten.reshape.default, self.op(aten.slice.Tensor, self.x, self.tdim, t, t + 1),
                        [self.batch, width]) for t in range(self.steps)]

    def build(self) -> tuple[Node, ...]:
        inputs = self.step_inputs()
        finals_h, finals_c, seqs = [], [], []
        for layer in range(self.layers):
            seqs = []
            for d in range(self.dirs):
                k = layer * self.dirs + d
                w = self.layer_weights(layer, d)
                h, c = self.initial(0, k), (self.initial(1, k) if self.kind == "lstm" else None)
                hs = [None] * self.steps
                for t in (range(self.steps) if d == 0 else reversed(range(self.steps))):
                    h, c = self.step(w, inputs[t], h, c)
                    hs[t] = h
                seqs.append(hs)
                finals_h.append(h)
                finals_c.append(c)
            if self.dirs == 2 and layer + 1 < self.layers:
                inputs = [self.cat([seqs[0][t], seqs[1][t]], -1) for t in range(self.steps)]
            else:
                inputs = seqs[0]
        timed = [self.cat([self.op(aten.reshape.default, h, self.time_shape(1)) for h in hs], self.tdim)
                 for hs in seqs]
        output = self.cat(timed, -1)
        stacked = lambda states: self.cat(  # noqa: E731
            [self.op(aten.reshape.default, s, [1, self.batch, self.hidden]) for s in states], 0)
        return (output, stacked(finals_h)) + ((stacked(finals_c),) if self.kind == "lstm" else ())


def _cell_step(gm: GraphModule, node: Node, with_sub: bool) -> tuple[Node, ...] | Node:
    """One step of an nn.LSTMCell / GRUCell / RNNCell op: (h', c') for the LSTM cell, else h'."""
    x, hx, w_ih, w_hh = node.args[:4]
    b_ih, b_hh = (list(node.args[4:6]) + [None, None])[:2]
    kind, gates = _CELLS[node.target]
    cell = _Cell(gm, node, kind, gates, w_hh, with_sub)
    states = list(hx) if kind == "lstm" else [hx]
    h, c = [None if _is_zero(gm, s) else s for s in states + [None] * (2 - len(states))]
    h, c = cell.step(cell.weights(w_ih, w_hh, b_ih, b_hh, "cell"), x, h, c)
    return (h, c) if kind == "lstm" else h


def _cell_ok(gm: GraphModule, node: Node) -> bool:
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() != 2:
        return False
    if any(p is not None and constant(gm, p) is None for p in node.args[2:6]):
        return False
    return node.target != aten.lstm_cell.default or all(
        u.op == "call_function" and u.target is operator.getitem for u in node.users)


def _unrollable(gm: GraphModule, node: Node) -> bool:
    x, hx, params, has_bias, _, dropout, train, _, _ = node.args[:9]
    val = x.meta.get("val") if isinstance(x, Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() != 3 or (train and dropout):
        return False
    if any(constant(gm, p) is None for p in params):
        return False
    per = 4 if has_bias else 2
    if len(params) % per or constant(gm, params[1]).shape[0] != constant(gm, params[1]).shape[1] * _KINDS[
            node.target][1]:
        return False  # LSTM projections (proj_size) add a weight per layer
    return all(u.op == "call_function" and u.target is operator.getitem for u in node.users)


def rnn_unroll(gm: GraphModule, with_sub: bool = True) -> GraphModule:
    """with_sub: whether the target's operator table has a subtraction (else the GRU's h - n is h + neg(n))."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in _CELLS and _cell_ok(gm, node):
            with gm.graph.inserting_before(node):
                outputs = _cell_step(gm, node, with_sub)
            if isinstance(outputs, Node):  # GRU / RNN cell: one tensor
                node.replace_all_uses_with(outputs)
                gm.graph.erase_node(node)
                changed = True
                continue
        elif node.target in _KINDS and _unrollable(gm, node):
            kind, gates = _KINDS[node.target]
            with gm.graph.inserting_before(node):
                outputs = _Unroll(gm, node, kind, gates, with_sub).build()
        else:
            continue
        for user in list(node.users):
            user.replace_all_uses_with(outputs[user.args[1]])
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)
        changed = True
    return _drop_unread(finish(gm)) if changed else gm


def _drop_unread(gm: GraphModule) -> GraphModule:
    """Delete the parameters made here that no node reads (a gate whose result multiplies a zero state)."""
    read = {n.target for n in gm.graph.nodes if n.op == "get_attr"}
    for name in gm.meta.pop(_MADE, []):
        if name not in read:
            delattr(gm, name)
    return gm

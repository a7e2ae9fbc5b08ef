"""Issue 36, cause 3: norms, cosine similarity, a threshold with a jump and a division by a computed tensor, written
as other suites' models write them, are quantized and run on the NPU (imxrt700, imx93) from ops each table has:

- F.cosine_similarity: sum(x * y) * rsqrt(sum(x * x)) * rsqrt(sum(y * y)) (passes/cosine_similarity_decompose.py);
- torch.norm / linalg.vector_norm, p = 2, and sqrt(sum(x ** 2)): s * rsqrt(s), s = sum(x * x)
  (passes/vector_norm_decompose.py);
- F.threshold(x, t, v), v != t: relu(x - t) + t + (v - t) * [x <= t], the indicator a clamped steep ramp
  (passes/threshold_decompose.py);
- a / b, b computed and never negative: (a * rsqrt(b)) * rsqrt(b) (passes/div_by_tensor_to_rsqrt.py).

References: each TFLite op of the partition, given its own int8 inputs, against the float op on those inputs
quantized with its output's parameters (within 1 step); the whole model against PyTorch's quantized model of the
same rewritten graph (convert_pt2e), in output steps; and against the float model in SQNR, next to what PyTorch's
quantized model reaches. Whole-model step bounds above 1 come from rsqrt's slope: an int8 sum of squares one step
from zero and one two steps from zero have rsqrt values 1 / sqrt(2) apart, so a 1-step difference of a small sum
(per op, allowed) moves the rsqrt by up to 29 % of its value, and the products after it by several output steps.
The threshold's jump moves an element by |v - t| where the int8 x - t of the two models differs by a step at 0.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from torch import nn

from executorch_neutron import lower
from executorch_neutron.backends import for_blob
from executorch_neutron.numerics import sqnr
from executorch_neutron.passes.pipeline import PassContext, run_passes
from executorch_neutron.pte import read_pte
from executorch_neutron.runtime import run
from executorch_neutron.tflite.reader import op_name, read_model
from harness import model_output_qparams, quantize_np, steps

TARGETS = ("imxrt700", "imx93")


class Embeddings(nn.Module):
    """Two linear embeddings of [N, C] features compared by `f` (a verification head)."""

    def __init__(self, f, c: int = 24, d: int = 16):
        super().__init__()
        self.a, self.b, self.f = nn.Linear(c, d), nn.Linear(c, d), f

    def forward(self, x):
        return self.f(self.a(x), self.b(x))


class Maps(nn.Module):
    """Two convolutions of one image, [1, C, H, W] feature maps, combined by `f`."""

    def __init__(self, f, cin: int = 3, c: int = 8):
        super().__init__()
        self.a, self.b, self.f = nn.Conv2d(cin, c, 3, padding=1), nn.Conv2d(cin, c, 3, padding=1), f

    def forward(self, x):
        return self.f(self.a(x), self.b(x))


def _cos(dim):
    return lambda a, b: F.cosine_similarity(a, b, dim=dim)


THRESHOLD, VALUE = 0.1, -1.0

#: name -> (model, input shape, max steps of the .pte vs PyTorch's quantized model (see the docstring))
CASES = {
    "cosine_nc": (lambda: Embeddings(_cos(1)), (2, 24), 1),
    "cosine_nchw": (lambda: Maps(_cos(1)), (1, 3, 9, 7), 8),
    "torch_norm_last_dim": (lambda: Embeddings(lambda a, b: torch.norm(a - b, dim=-1)), (2, 24), 1),
    "sqrt_of_sum_of_squares": (lambda: Embeddings(lambda a, b: (a - b).pow(2).sum(-1).sqrt()), (2, 24), 1),
    "vector_norm_keepdim": (lambda: Maps(lambda a, b: torch.linalg.vector_norm(a + b, 2, dim=-1, keepdim=True)),
                            (1, 3, 9, 7), 2),
    "threshold_jump": (lambda: Maps(lambda a, b: F.threshold(a, THRESHOLD, VALUE) + b), (1, 3, 9, 7), 1),
    "nn_threshold_to_zero": (lambda: Maps(lambda a, b: nn.Threshold(0.25, 0.0)(a) * b), (1, 3, 9, 7), 1),
    "div_one_plus_abs": (lambda: Maps(lambda a, b: a / (1 + b.abs())), (1, 3, 9, 7), 2),
    "div_by_its_sum": (lambda: Embeddings(lambda a, b: a.exp() / a.exp().sum(-1, keepdim=True)), (2, 24), 1),
}


def _samples(shape, n, seed):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(*shape, generator=g),) for _ in range(n)]


def _lower(name, target, **options):
    make, shape, _ = CASES[name]
    torch.manual_seed(0)
    model = make().eval()
    calib = _samples(shape, 8, 0)
    return model, lower(model, calib[0], calib, target=target, **options)


_FLOAT_OPS = {
    "ADD": lambda x, y: x + y, "SUB": lambda x, y: x - y, "MUL": lambda x, y: x * y,
    "RSQRT": lambda x: np.where(x > 0, 1 / np.sqrt(np.maximum(x, 1e-30)), np.inf),
    "RELU": lambda x: np.maximum(x, 0), "RELU_0_TO_1": lambda x: np.clip(x, 0, 1),
}
_FUSED = {schema.ActivationFunctionType.RELU: (0, np.inf), schema.ActivationFunctionType.RELU_N1_TO_1: (-1, 1),
          schema.ActivationFunctionType.RELU6: (0, 6)}


def op_steps(tflite: bytes, inputs: list[np.ndarray]) -> dict[str, int]:
    """Per elementwise / MEAN op of `tflite` run on `inputs` (LiteRT's reference kernels): the largest difference,
    in its output's steps, between its int8 output and the float op on its own dequantized int8 inputs, quantized
    with the output's parameters. Keys: '<index> <operator>'."""
    it = Interpreter(model_content=tflite, experimental_preserve_all_tensors=True,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    model = read_model(tflite)
    graph = model.subgraphs[0]
    details = {d["index"]: d for d in it.get_tensor_details()}

    def value(i):
        scale, zp = details[i]["quantization"]
        t = it.get_tensor(i)
        return (t.astype(np.float64) - zp) * scale if scale else t.astype(np.float64)

    out = {}
    for k, op in enumerate(graph.operators):
        name = op_name(model, op)
        if name not in _FLOAT_OPS and name != "MEAN":
            continue
        if name == "MEAN":
            x = value(op.inputs[0])
            axes = tuple(int(a) for a in np.atleast_1d(it.get_tensor(op.inputs[1])))
            keep = len(it.get_tensor(op.outputs[0]).shape) == x.ndim
            want = x.mean(axis=axes, keepdims=keep)
        else:
            want = _FLOAT_OPS[name](*[value(i) for i in op.inputs])
        act = getattr(op.builtinOptions, "fusedActivationFunction", schema.ActivationFunctionType.NONE)
        if act in _FUSED:
            want = np.clip(want, *_FUSED[act])
        scale, zp = details[op.outputs[0]]["quantization"]
        got = it.get_tensor(op.outputs[0])
        want = quantize_np(np.nan_to_num(want, posinf=1e30, neginf=-1e30), scale, zp).reshape(got.shape)
        out[f"{k} {name}"] = int(steps(got, want).max())
    return out


def _partition_inputs(r, x):
    """The partition's int8 inputs for model input `x` (one partition taking the model's input)."""
    blob = r.report.partitions[0].blob
    tflite = for_blob(blob).pte_tflite(blob, read_pte(r.pte))  # the partition TFLite the host runs
    it = Interpreter(model_content=tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    (d,) = it.get_input_details()
    q = quantize_np(x.numpy(), *d["quantization"])
    return tflite, [q if list(d["shape"]) == list(q.shape) else np.ascontiguousarray(q.transpose(0, 2, 3, 1))]


def _outputs(model, r, samples):
    """(float, PyTorch's quantized model, .pte) outputs over `samples`, stacked."""
    with torch.no_grad():
        return tuple(np.stack([f(x) for x in samples]) for f in (
            lambda x: model(*x).numpy(), lambda x: r.quantized_model(*x).numpy(), lambda x: run(r.pte, x)[0].numpy()))


aten = torch.ops.aten
#: the ATen op each case's rewrite removes
REMOVED = {"cosine": aten.cosine_similarity.default, "norm": aten.linalg_vector_norm.default,
           "sqrt": aten.sqrt.default, "threshold": aten.threshold.default, "div": aten.div.Tensor}


def _rewritten(model, x, ctx=PassContext()):
    return run_passes(torch.export.export(model, x, strict=False).module(), ctx)


def _targets(gm) -> set:
    return {n.target for n in gm.graph.nodes if n.op == "call_function"}


@pytest.mark.fast
@pytest.mark.parametrize("name", CASES)
def test_the_rewritten_graph_computes_what_pytorch_does(name):
    make, shape, _ = CASES[name]
    torch.manual_seed(0)
    model, x = make().eval(), _samples(shape, 1, 3)[0]
    gm = _rewritten(model, x)
    assert not _targets(gm) & set(REMOVED.values()), _targets(gm)
    got, want = gm(*x), model(*x)
    if name.startswith("threshold") or name.startswith("nn_threshold"):  # x within 1e-3 below t blends (docstring)
        t = THRESHOLD if name == "threshold_jump" else 0.25
        with torch.no_grad():
            far = ((model.a(*x) - t).abs() > 1e-3)
        got, want = got[far], want[far]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.fast
@pytest.mark.parametrize("f, kept", [
    (lambda a, b: a / b, aten.div.Tensor),  # a divisor that may be negative
    (lambda a, b: a / (b - b.abs().amax()), aten.div.Tensor),  # ... and one never positive
    (lambda a, b: torch.sqrt(a.abs() + b), aten.sqrt.default),  # a square root of anything but a sum of squares
    (lambda a, b: torch.linalg.vector_norm(a - b, 1, dim=-1), aten.linalg_vector_norm.default),  # ord 1
], ids=["div_signed", "div_negative", "sqrt", "norm_ord_1"])
def test_what_the_rewrites_cannot_compute_is_left_alone(f, kept):
    gm = _rewritten(Maps(f).eval(), _samples((1, 3, 9, 7), 1, 3)[0])
    assert kept in _targets(gm)


@pytest.mark.fast
@pytest.mark.parametrize("name", ["cosine_nc", "torch_norm_last_dim", "div_one_plus_abs"])
def test_no_rewrite_without_rsqrt(name):
    """Neutron's documented table has no rsqrt: the op is left whole (one float op, not pieces split between NPU
    and CPU)."""
    make, shape, _ = CASES[name]
    gm = _rewritten(make().eval(), _samples(shape, 1, 3)[0], PassContext(profile="documented"))
    assert aten.rsqrt.default not in _targets(gm) and _targets(gm) & set(REMOVED.values())


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", CASES)
def test_runs_on_the_npu(name, target):
    model, r = _lower(name, target)
    assert [(j.op, j.reason) for j in r.report.rejections] == []
    assert len(r.report.partitions) == 1
    samples = _samples(CASES[name][1], 4, 7)
    for x in samples[:2]:
        per_op = op_steps(*_partition_inputs(r, x[0]))
        assert per_op and max(per_op.values()) <= 1, per_op
    flt, ptq, pte = _outputs(model, r, samples)
    (scale, zp), = model_output_qparams(r.quantized_model)
    off = steps(quantize_np(pte, scale, zp), quantize_np(ptq, scale, zp))
    if name == "threshold_jump":  # the jump: only where a's int8 x - t can differ by a step at 0
        with torch.no_grad():
            a = np.stack([model.a(*x).numpy() for x in samples])
        assert np.all(np.abs(a[off > 1] - THRESHOLD) < 0.05) and (off > 1).mean() < 0.01
        off = off[np.abs(a - THRESHOLD) >= 0.05]
    assert off.max() <= CASES[name][2]
    # int8 costs what it costs PyTorch's quantized model, within 1 dB
    assert sqnr(flt, pte) >= sqnr(flt, ptq) - 1.0, (sqnr(flt, pte), sqnr(flt, ptq))


@pytest.mark.parametrize("name, origin, step", [
    ("cosine_nc", "aten.cosine_similarity.default", "cosine_similarity_decompose"),
    ("torch_norm_last_dim", "aten.linalg_vector_norm.default", "vector_norm_decompose"),
])
def test_documented_table_keeps_them_float_and_says_why(name, origin, step):
    """Neutron's documented table has no rsqrt: the op stays float on the CPU, and each of its pieces' reasons names
    the rewrite and what the table lacks."""
    _, r = _lower(name, "imxrt700", constraints="documented")
    pieces = [j.reason for j in r.report.rejections if f"part of {origin}" in j.reason]
    assert pieces
    for reason in pieces:
        assert f"{step} writes it from int8 table ops where the table runs aten.rsqrt.default" in reason, reason
        assert "constraints='documented'" in reason, reason


def test_a_divisor_of_unknown_sign_stays_float():
    """rsqrt(b)^2 is 1 / b only for b > 0: a division by a value that may be negative is not rewritten."""
    model = Maps(lambda a, b: a / b).eval()
    calib = _samples((1, 3, 9, 7), 4, 0)
    r = lower(model, calib[0], calib, target="imx93")
    assert [j.op for j in r.report.rejections] == ["aten.div.Tensor"]
